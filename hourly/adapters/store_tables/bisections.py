"""Every bisection of a workdir (schema 2): its window, its answer, every verdict it reached (its
probes) and the rounds of its paired verdicts (schema 10)."""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

from hourly.adapters.store_tables.base import METRIC_FILTER, Tables, inserted_id


class Spent(NamedTuple):
    """What a bisection has run of its window's states (:meth:`BisectionTables.spent`)."""
    processes: int
    samples: int
    seconds: float
    asked: list[int]  # the sample counts the processes were asked for, each once, smallest first


class BisectionTables(Tables):
    """The ``bisections``, ``bisect_probes`` and ``bisect_rounds`` tables."""

    def bisection(self, key: str, fields: dict[str, Any]) -> tuple[int, str, dict | None]:
        """Find or create the bisection ``key``: (id, status, stored result or None)."""
        with self.transaction() as c:
            r = c.execute("SELECT id, status, result FROM bisections WHERE key=?", (key,)).fetchone()
            if r:
                return r["id"], r["status"], json.loads(r["result"]) if r["result"] else None
            now = time.time()
            cur = c.execute(
                "INSERT INTO bisections (key, bench_key, mode, good_time, bad_time, good_xla, good_jax,"
                " bad_xla, bad_jax, status, result, created, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key, fields["bench_key"], fields["mode"], fields["good_time"], fields["bad_time"],
                 fields["good_xla"], fields["good_jax"], fields["bad_xla"], fields["bad_jax"], "running",
                 None, now, now))
            return inserted_id(cur), "running", None

    def bisection_updated(self, bid: int) -> float:
        """When bisection ``bid`` last changed (its answer stored, for a finished one)."""
        return float(self.conn.execute("SELECT updated FROM bisections WHERE id=?", (bid,)).fetchone()[0])

    def finish_bisection(self, bid: int, result: dict) -> None:
        with self.transaction() as c:
            c.execute("UPDATE bisections SET status='done', result=?, updated=? WHERE id=?",
                      (json.dumps(result), time.time(), bid))

    def stop_bisection(self, bid: int, why: str) -> None:
        """Bisection ``bid`` stopped without an answer, for ``why`` (the user error's line, with its
        fix): kept unfinished, so the same command (or a changed one) takes it up again, and what
        shows it says why it stopped rather than only that it has no answer yet."""
        with self.transaction() as c:
            c.execute("UPDATE bisections SET status='stopped', result=?, updated=? WHERE id=?",
                      (json.dumps({"stopped": why}), time.time(), bid))

    def resume_bisection(self, bid: int) -> None:
        """A stopped bisection taken up again: running, its reason forgotten."""
        with self.transaction() as c:
            c.execute("UPDATE bisections SET status='running', result=NULL, updated=? WHERE id=? AND status='stopped'",
                      (time.time(), bid))

    def restart_bisection(self, bid: int) -> None:
        """Forget a bisection's probes, rounds and answer (``--rerun``); measurements stay. It begins
        again now: what it has spent (:meth:`spent`) counts from here, not the run it replaces."""
        with self.transaction() as c:
            c.execute("DELETE FROM bisect_probes WHERE bisection=?", (bid,))
            c.execute("DELETE FROM bisect_rounds WHERE bisection=?", (bid,))
            c.execute("DELETE FROM manual_marks WHERE bisection=?", (bid,))  # verdicts given for the old run
            now = time.time()
            c.execute("UPDATE bisections SET status='running', result=NULL, created=?, updated=? WHERE id=?",
                      (now, now, bid))

    def add_probe(self, bid: int, p: dict[str, Any]) -> None:
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM bisect_probes WHERE bisection=?",
                            (bid,)).fetchone()[0]
            c.execute("INSERT INTO bisect_probes (bisection, seq, role, xla, jax, verdict, partial, reason, samples,"
                      " returncodes, builds, runs, created, jaxlib_builds, jax_builds, run_samples, statistic)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (bid, seq, p["role"], p["xla"], p["jax"], p["verdict"], int(p.get("between", False)),
                       p.get("reason"),
                       json.dumps(p.get("samples", [])), json.dumps(p.get("returncodes", [])),
                       int(p.get("builds", 0)), int(p.get("runs", 0)), time.time(),
                       int(p.get("jaxlib_builds", 0)), int(p.get("jax_builds", 0)), int(p.get("run_samples", 0)),
                       json.dumps(p["statistic"]) if p.get("statistic") else None))

    def add_round(self, bid: int, states: str, block: str) -> None:
        """One round of a paired verdict of bisection ``bid``, as it is measured: ``states`` names the
        states it compares (JSON, the caller's), ``block`` each process's value (JSON)."""
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM bisect_rounds WHERE bisection=? AND states=?",
                            (bid, states)).fetchone()[0]
            c.execute("INSERT INTO bisect_rounds (bisection, states, seq, block, created) VALUES (?, ?, ?, ?, ?)",
                      (bid, states, seq, block, time.time()))

    def rounds(self, bid: int) -> dict[str, list[str]]:
        """The rounds of bisection ``bid``'s paired verdicts by the states they compare, in order."""
        out: dict[str, list[str]] = {}
        for r in self.conn.execute("SELECT states, block FROM bisect_rounds WHERE bisection=? ORDER BY states, seq",
                                   (bid,)):
            out.setdefault(r["states"], []).append(r["block"])
        return out

    def spent(self, bid: int, bench_key: str, xlas: set[str], jaxs: set[str], origin: str,
              metric: str | None = None) -> Spent:
        """What bisection ``bid`` has run of its window's states (``xlas`` × ``jaxs``: the states and
        the mixed states of a blame) under ``bench_key`` since it began, in every call of it: the
        benchmark processes, the samples they printed, their seconds, and the sample counts they were
        asked for (HOURLY_SAMPLES; each once, smallest first). Every process counts —
        an interval's end measured beside a probe, a warm-up, the processes of a round a stop cut short —
        for all of them held the machine. Rows of ``metric`` (each process records one row per
        named metric; ``origin``: the bisection's, as its rows record it)."""
        r = self.conn.execute("SELECT created FROM bisections WHERE id=?", (bid,)).fetchone()
        if r is None:
            return Spent(0, 0, 0.0, [])
        rows = self.conn.execute(
            f"SELECT xla, jax, runs FROM measurements WHERE bench_key=? AND origin=? AND created>=?"
            f" AND {METRIC_FILTER}", (bench_key, origin, r["created"], metric, metric))
        processes, samples, seconds, asked = 0, 0, 0.0, set()
        for row in rows:
            if row["xla"] not in xlas or row["jax"] not in jaxs:
                continue
            for run in json.loads(row["runs"]):
                processes += 1
                samples += len(run.get("samples") or []) or (1 if run.get("value") is not None else 0)
                seconds += float(run.get("duration") or 0.0)
                if isinstance(run.get("asked"), int):
                    asked.add(run["asked"])
        return Spent(processes, samples, seconds, sorted(asked))

    def probes(self, bid: int) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT * FROM bisect_probes WHERE bisection=? ORDER BY seq", (bid,))
        out = []
        for r in rows:
            d = dict(r)
            d["samples"] = json.loads(d["samples"])
            d["returncodes"] = json.loads(d["returncodes"])
            d["statistic"] = json.loads(d["statistic"]) if d.get("statistic") else None
            out.append(d)
        return out

    def last_bisection(self) -> int | None:
        """The id of the bisection last started or updated."""
        r = self.conn.execute("SELECT id FROM bisections ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        return r[0] if r else None

    def bisection_results(self, bench_key: str | None = None) -> list[dict[str, Any]]:
        """Every finished bisection's answer, oldest first (for reports); of those measured under
        ``bench_key`` alone when given (another key is another build or benchmark: its answer is
        not this one's)."""
        return [a for key, a in self.bisection_answers() if bench_key is None or key == bench_key]

    def bisection_answers(self) -> list[tuple[str, dict[str, Any]]]:
        """Every finished bisection's answer with the measurement key it was measured under
        (``Settings.bench_key``: the benchmark and the build), oldest first."""
        rows = self.conn.execute("SELECT bench_key, result FROM bisections WHERE status='done' ORDER BY id")
        return [(r[0], json.loads(r[1])) for r in rows if r[1]]

    def unfinished_bisections(self) -> list[dict[str, Any]]:
        """The bisections started and not finished (no answer yet), oldest first: their measurement
        key, mode and window (``good_time``, ``bad_time``: unix times), and ``stopped``: why one
        stopped without an answer (None: interrupted, or running)."""
        rows = self.conn.execute("SELECT bench_key, mode, good_time, bad_time, status, result FROM bisections"
                                 " WHERE status!='done' ORDER BY id")
        return [{"bench_key": r["bench_key"], "mode": r["mode"], "good_time": r["good_time"], "bad_time": r["bad_time"],
                 # why it stopped (stop_bisection), None while it is only unfinished
                 "stopped": (json.loads(r["result"]) or {}).get("stopped") if r["status"] == "stopped" and r["result"]
                 else None} for r in rows]

    def newest_bisection_key(self) -> str | None:
        """The measurement key of the bisection last started or updated (None: no bisection)."""
        r = self.conn.execute("SELECT bench_key FROM bisections ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        return r[0] if r else None

