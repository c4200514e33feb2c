"""The results store: one SQLite file per workdir, versioned, committed point by point.

Every finished measurement is written in its own transaction, so a scan killed at any moment
(Ctrl-C or ``kill -9``) keeps everything finished before it; rerunning the command measures only
what is missing.

Tables:
- ``meta``: the schema version.
- ``settings``: the settings of the last scan (JSON), which later commands (bisect) reuse.
- ``points``: the instants a scan planned, per level ("hourly"), with the pair each resolved to.
- ``builds``: one row per build identity (schema 4; before: per pair): the pair, status, whether it
  installs in place, wheels, log, and how it was built (hourly/measure/build_cache.py's identity, secrets redacted).
- ``measurements``: every measurement of a pair under one benchmark key (the command, its
  directory, environment, metric regex and Python): status, value (median), samples (one value per
  counted run: a run that prints many samples keeps them in its entry of ``runs``), per-run
  detail, its ``origin`` (``scan``, ``bisect``) and (schema 8) its ``metric``: ``''`` for the one
  metric the regex reads (every row of an older store), else the name of a ``METRIC name:`` line
  (``--metrics``: one row per name per measurement, all written in one transaction; a measurement
  that measured no name at all, a failed build or runs that all failed, is one ``''`` row). A row
  is never updated: the scan's table reads the ``scan`` rows alone, so later commands'
  measurements never change it.
- ``bisections`` (schema 2): one row per bisected window (its identity, status, final answer).
- ``bisect_probes`` (schema 2; 6 adds jaxlib and jax package builds apart; 8 the samples its runs printed,
  ``run_samples``, apart from the runs, process starts): every verdict a bisection reached, with the builds and runs it cost.
- ``nightly`` (schema 3): every date ``hourly nightly`` measured: image, digest, status, value,
  samples, runs, and the JAX/XLA commits found in the image; (schema 8) its ``metric``, as above.
- ``manual_waiting``, ``manual_marks`` (made on opening, no schema step: tables an older hourly
  never reads): the probe a manual bisection (``hourly bisect --manual``) waits at, and the
  verdicts ``hourly mark`` gave from another shell, each taken once by the waiting bisection.
- ``releases`` (schema 5): the release level, every jax release ``hourly releases`` measured from
  the package index: the jaxlib paired with it, release time, status (a measurement's, or
  ``missing`` / ``install_failed``), value, samples, runs, installer and environment; (schema 8)
  its ``metric``, as above.
- ``watch_builds``, ``watch_values``, ``watch_checks``, ``watch_runs``, ``watch_alerts`` (schema 7):
  ``hourly watch`` (hourly/watch/): every build a watch found (nightly date, wheel version or
  instant of the history) with what measured it and the decision on its arrival, its values per
  metric, each suspected step and its confirmation (the interleaved runs of the two builds, one
  row per pair), and the alerts (their confirmed steps, the hunt started, the recovery, the
  events not yet delivered). Kept apart from ``measurements``: a series per metric name.

Every SQL statement of hourly is in this module.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol
from urllib.parse import quote

from hourly.errors import UserError
from hourly.model import NightlyPoint, ReleasePoint, Status

SCHEMA_VERSION = 8
STORE_NAME = "hourly.sqlite"
#: the folder of a workdir that holds every log (builds, runs, containers, hunts)
LOGS = "logs"
#: the settings row of every measurement key's identity (:meth:`Store.note_measure_key`)
MEASURE_KEYS = "measure_keys"


def log_dir(workdir: str | Path, kind: str | None = None) -> Path:
    """Where a workdir keeps its logs (of one ``kind``: ``nightly``, ``releases``, ``hunt``): the
    one place these paths are made. Not created."""
    base = Path(workdir).expanduser().absolute() / LOGS
    return base / kind if kind else base

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points (
    level TEXT NOT NULL, time TEXT NOT NULL, xla TEXT NOT NULL, jax TEXT NOT NULL,
    PRIMARY KEY (level, time));
CREATE TABLE IF NOT EXISTS builds (
    xla TEXT NOT NULL, jax TEXT NOT NULL, status TEXT NOT NULL, in_place INTEGER NOT NULL,
    wheels TEXT NOT NULL, log_path TEXT, tail TEXT, duration REAL, finished REAL NOT NULL,
    PRIMARY KEY (xla, jax));
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT, bench_key TEXT NOT NULL, xla TEXT NOT NULL,
    jax TEXT NOT NULL, status TEXT NOT NULL, value REAL, samples TEXT NOT NULL,
    runs TEXT NOT NULL, detail TEXT, origin TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS measurements_pair ON measurements (bench_key, xla, jax);
CREATE TABLE IF NOT EXISTS manual_waiting (
    slot INTEGER PRIMARY KEY CHECK (slot = 1), bisection INTEGER NOT NULL, role TEXT NOT NULL,
    xla TEXT NOT NULL, jax TEXT NOT NULL, pid INTEGER, host TEXT, since REAL NOT NULL);
CREATE TABLE IF NOT EXISTS manual_marks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, bisection INTEGER NOT NULL, role TEXT NOT NULL,
    xla TEXT NOT NULL, jax TEXT NOT NULL, verdict TEXT NOT NULL, source TEXT NOT NULL,
    taken INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
"""


@dataclass
class Measurement:
    xla: str
    jax: str
    status: str  # a hourly.model.Status value
    value: float | None
    samples: list[float] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None
    origin: str = "scan"
    id: int | None = None
    created: float | None = None
    #: ``''``: the metric the regex reads (every row before named metrics); else a ``METRIC`` line's name
    metric: str = ""

    def by_process(self) -> list[list[float]]:
        """Every counted sample, grouped by the counted run (process) that printed it, in the order
        run; a run that printed one value (every row before many samples per run, and
        ``--metric-samples last``) is ``[value]``.

        The process is the unit of independent noise: the samples of one process share its state
        (compiled code, caches, clocks, the machine's load while it ran), so they vary less than
        processes do. ``samples`` holds one summary per process (its median), which is what a
        verdict that treats samples as independent must take; these are for a statistic that
        models both levels (within and between processes)."""
        out = []
        for r in self.runs:
            if r.get("warmup") or r.get("status") != Status.OK.value:
                continue
            got = r.get("samples")
            if got is None:
                got = [r["value"]] if r.get("value") is not None else []
            if got:
                out.append([float(x) for x in got])
        return out

    @property
    def processes(self) -> int:
        """Counted runs (process starts, warm-up runs left out), whatever each printed."""
        return sum(1 for r in self.runs if not r.get("warmup"))

    @property
    def sample_count(self) -> int:
        """Every counted sample of every counted run (more than ``len(samples)`` when a run printed many)."""
        return sum(len(s) for s in self.by_process())


@dataclass
class BuildRecord:
    xla: str
    jax: str
    status: str
    in_place: bool
    wheels: list[str]
    log_path: str | None
    tail: str | None
    duration: float | None
    finished: float | None = None
    build_key: str | None = None  # hourly.measure.build_cache.entry_key: the pair and how it was built
    identity: dict | None = None


class Records(Protocol):
    """What building and measuring write to: a :class:`Store`, or a Slurm job's
    :class:`hourly.worker.RecordingStore` that keeps the rows for the coordinator."""

    logs: Path

    def record_build(self, b: BuildRecord) -> None: ...

    def add_measurement(self, bench_key: str, m: Measurement) -> object: ...

    def add_measurements(self, bench_key: str, ms: list[Measurement]) -> object: ...

    def metric_names(self, bench_key: str) -> list[str]: ...


class Store:
    def __init__(self, workdir: str | os.PathLike, create: bool = True, made_by: str = "hourly scan",
                 read_only: bool = False):
        """``made_by``: the command that fills this store, named when there is none.

        ``read_only`` (``show``, ``report``, ``detect``: they only read): the store is opened
        read-only and nothing in the workdir is written, so a read-only workdir (a colleague's, a
        mounted copy) can be read; a store an older hourly wrote is upgraded first where the
        workdir can be written, and refused with one line where it cannot."""
        self.workdir = Path(workdir).expanduser().absolute()
        self.path = self.workdir / STORE_NAME
        #: the workdir's logs (:func:`log_dir`)
        self.logs = log_dir(self.workdir)
        self.read_only = read_only
        if (not create or read_only) and not self.path.exists():
            raise UserError(f"no results store in {self.workdir}",
                            f"run `{made_by}` first, or pass --workdir with the workdir it used")
        if read_only and self._open_read_only():
            return
        self.read_only = False
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            # one probe per process: two runs starting together on one workdir must not unlink each other's
            probe = self.workdir / f".hourly-write-test-{os.getpid()}"
            probe.write_text("")
            probe.unlink(missing_ok=True)
        except OSError as e:
            raise UserError(f"workdir {self.workdir} is not writable ({e.strerror})",
                            "pass --workdir with a directory you can write to") from e
        if not self.path.exists():
            _create(self.path)
        _check_whole(self.path)  # a damaged or empty store is refused before anything writes to it
        self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, factory=_Connection)
        self.conn.store_path = self.path
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def _open_read_only(self) -> bool:
        """Open the store read-only (SQLite's ``mode=ro``; ``immutable`` where a read-only folder
        holds no write-ahead log to read, which SQLite's read-only WAL mode needs a ``-shm`` file
        for). False: its schema is older than this hourly's and the workdir can be written, so it
        is opened as usual and upgraded; refused in one line where it cannot be."""
        wal = Path(f"{self.path}-wal")
        uri = f"file:{quote(str(self.path))}?mode=ro"
        if not os.access(self.workdir, os.W_OK) and not Path(f"{self.path}-shm").exists() \
                and not (wal.exists() and wal.stat().st_size):
            uri = f"file:{quote(str(self.path))}?immutable=1"  # nothing unwritten: the main file is the store
        _check_empty(self.path)
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None, factory=_Connection)
        except sqlite3.Error as e:
            fault = store_fault(self.path, e)
            raise (fault if fault is not e else UserError(f"cannot open the results store {self.path} read-only ({e})",
                                                          "check the file and its folder")) from e
        conn.store_path = self.path
        conn.row_factory = sqlite3.Row
        try:
            _check_whole(self.path, conn)
            _check_tables(conn, self.path)  # a whole file that lacks a table of its schema is damaged
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() \
                if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() else None
        except BaseException:
            conn.close()
            raise
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            conn.close()
            raise UserError(f"{self.path} was written by a newer hourly (schema {version})",
                            "upgrade hourly, or use another --workdir")
        if version < SCHEMA_VERSION:
            conn.close()
            if os.access(self.workdir, os.W_OK) and os.access(self.path, os.W_OK):
                return False  # upgraded by the usual opening
            raise UserError(f"the results store {self.path} was written by an older hourly (schema {version}) and "
                            "its workdir is read-only: it cannot be upgraded to be read",
                            "copy the workdir somewhere writable and pass --workdir with the copy")
        self.conn = conn
        return True

    # -- schema -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        _check_tables(self.conn, self.path)  # a store missing a table of its schema is never written to
        self.conn.executescript(_SCHEMA)
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise UserError(f"{self.path} was written by a newer hourly (schema {version})",
                            "upgrade hourly, or use another --workdir")
        for v in range(version + 1, SCHEMA_VERSION + 1):
            with self.transaction() as c:
                for stmt in MIGRATIONS.get(v, []):
                    m = re.match(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", stmt)
                    if m and any(r[1] == m[2] for r in c.execute(f"PRAGMA table_info({m[1]})")):
                        continue  # a store whose version was set back already has it: migrations stay idempotent
                    c.execute(stmt)
                c.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(v),))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            if self.conn.in_transaction:  # SQLite itself may have rolled back (a full disk)
                try:
                    self.conn.execute("ROLLBACK")
                except (sqlite3.Error, UserError):
                    pass
            raise
        else:
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    # -- settings ---------------------------------------------------------------------------
    def save_settings(self, name: str, value: dict[str, Any]) -> None:
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (name, json.dumps(value)))

    def load_settings(self, name: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT value FROM settings WHERE name=?", (name,)).fetchone()
        return json.loads(row[0]) if row else None

    # -- points -----------------------------------------------------------------------------
    def save_points(self, level: str, points: list[tuple[str, str, str]]) -> None:
        """(time label, xla, jax) for each planned instant."""
        with self.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO points VALUES (?, ?, ?, ?)",
                          [(level, t, x, j) for t, x, j in points])

    def points(self, level: str = "hourly") -> list[tuple[str, str, str]]:
        rows = self.conn.execute("SELECT time, xla, jax FROM points WHERE level=? ORDER BY time",
                                 (level,))
        return [tuple(r) for r in rows]

    # -- builds -----------------------------------------------------------------------------
    def record_build(self, b: BuildRecord) -> None:
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO builds (build_key, xla, jax, status, in_place, wheels, log_path,"
                      " tail, duration, finished, identity) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (b.build_key or f"pair:{b.xla}-{b.jax}", b.xla, b.jax, b.status, int(b.in_place),
                       json.dumps(b.wheels), b.log_path, b.tail, b.duration, time.time(),
                       json.dumps(b.identity) if b.identity is not None else None))

    def built_pairs(self) -> set[tuple[str, str]]:
        """The (xla, jax) pairs a build ran for in this workdir (built, failed or installed in place;
        never those whose wheels came from the shared cache)."""
        return {(r[0], r[1]) for r in self.conn.execute("SELECT DISTINCT xla, jax FROM builds")}

    def build(self, xla: str, jax: str, build_key: str | None = None) -> BuildRecord | None:
        """The build of a pair under ``build_key`` (how it was built), or its latest under any."""
        if build_key:
            r = self.conn.execute("SELECT * FROM builds WHERE build_key=?", (build_key,)).fetchone()
        else:
            r = self.conn.execute("SELECT * FROM builds WHERE xla=? AND jax=? ORDER BY finished DESC LIMIT 1",
                                  (xla, jax)).fetchone()
        if not r:
            return None
        return BuildRecord(r["xla"], r["jax"], r["status"], bool(r["in_place"]),
                           json.loads(r["wheels"]), r["log_path"], r["tail"], r["duration"], r["finished"],
                           r["build_key"], json.loads(r["identity"]) if r["identity"] else None)

    # -- measurements -----------------------------------------------------------------------
    def add_measurement(self, bench_key: str, m: Measurement) -> int:
        self.add_measurements(bench_key, [m])
        assert m.id is not None  # set by the INSERT
        return m.id

    def add_measurements(self, bench_key: str, ms: list[Measurement]) -> None:
        """The rows of one measurement (one per named metric) in one transaction: a run killed
        between them leaves all or none."""
        with self.transaction() as c:
            now = time.time()
            for m in ms:
                cur = c.execute(
                    "INSERT INTO measurements (bench_key, xla, jax, status, value, samples, runs, detail,"
                    " origin, created, metric) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (bench_key, m.xla, m.jax, m.status, m.value, json.dumps(m.samples),
                     json.dumps(m.runs), m.detail, m.origin, now, m.metric))
                m.id = _inserted_id(cur)
                m.created = now

    def latest(self, bench_key: str, xla: str, jax: str, origin: str | None = None,
               metric: str | None = None) -> Measurement | None:
        """The newest measurement of a pair (of ``origin`` alone when given; of ``metric`` when
        given: :func:`metric_rows`)."""
        r = self.conn.execute(
            "SELECT * FROM measurements WHERE bench_key=? AND xla=? AND jax=? AND (? IS NULL OR origin=?)"
            f" AND {_METRIC_FILTER} ORDER BY id DESC LIMIT 1",
            (bench_key, xla, jax, origin, origin, metric, metric)).fetchone()
        return _measurement(r) if r else None

    def all_latest(self, bench_key: str, origin: str | None = None,
                   metric: str | None = None) -> dict[tuple[str, str], Measurement]:
        """The newest measurement of every pair (of ``origin`` alone when given: the scan's table
        reads ``"scan"``, so a later command's rows never change it; of ``metric`` when given)."""
        rows = self.conn.execute("SELECT * FROM measurements WHERE bench_key=? AND (? IS NULL OR origin=?)"
                                 f" AND {_METRIC_FILTER} ORDER BY id", (bench_key, origin, origin, metric, metric))
        return {(r["xla"], r["jax"]): _measurement(r) for r in rows}

    def measurements(self, bench_key: str, xla: str, jax: str, metric: str | None = None) -> list[Measurement]:
        """Every measurement of a pair, oldest first (of ``metric`` when given)."""
        rows = self.conn.execute(
            f"SELECT * FROM measurements WHERE bench_key=? AND xla=? AND jax=? AND {_METRIC_FILTER} ORDER BY id",
            (bench_key, xla, jax, metric, metric))
        return [_measurement(r) for r in rows]

    def metric_names(self, bench_key: str) -> list[str]:
        """The named metrics measured under ``bench_key``, in the order first recorded ([] for the
        regex's one metric)."""
        rows = self.conn.execute("SELECT metric, MIN(id) AS first FROM measurements WHERE bench_key=? AND metric != ''"
                                 " GROUP BY metric ORDER BY first", (bench_key,))
        return [r[0] for r in rows]

    # -- bisections (schema 2) --------------------------------------------------------------
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
            return _inserted_id(cur), "running", None

    def finish_bisection(self, bid: int, result: dict) -> None:
        with self.transaction() as c:
            c.execute("UPDATE bisections SET status='done', result=?, updated=? WHERE id=?",
                      (json.dumps(result), time.time(), bid))

    def restart_bisection(self, bid: int) -> None:
        """Forget a bisection's probes and answer (``--rerun``); measurements stay."""
        with self.transaction() as c:
            c.execute("DELETE FROM bisect_probes WHERE bisection=?", (bid,))
            c.execute("DELETE FROM manual_marks WHERE bisection=?", (bid,))  # verdicts given for the old run
            c.execute("UPDATE bisections SET status='running', result=NULL, updated=? WHERE id=?",
                      (time.time(), bid))

    def add_probe(self, bid: int, p: dict[str, Any]) -> None:
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM bisect_probes WHERE bisection=?",
                            (bid,)).fetchone()[0]
            c.execute("INSERT INTO bisect_probes (bisection, seq, role, xla, jax, verdict, partial, reason, samples,"
                      " returncodes, builds, runs, created, jaxlib_builds, jax_builds, run_samples)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (bid, seq, p["role"], p["xla"], p["jax"], p["verdict"], int(p.get("between", False)),
                       p.get("reason"),
                       json.dumps(p.get("samples", [])), json.dumps(p.get("returncodes", [])),
                       int(p.get("builds", 0)), int(p.get("runs", 0)), time.time(),
                       int(p.get("jaxlib_builds", 0)), int(p.get("jax_builds", 0)), int(p.get("run_samples", 0))))

    def probes(self, bid: int) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT * FROM bisect_probes WHERE bisection=? ORDER BY seq", (bid,))
        out = []
        for r in rows:
            d = dict(r)
            d["samples"] = json.loads(d["samples"])
            d["returncodes"] = json.loads(d["returncodes"])
            out.append(d)
        return out

    # -- manual verdicts (hourly bisect --manual, hourly mark) ------------------------------------
    def set_waiting(self, bid: int, role: str, xla: str, jax: str) -> None:
        """The probe a manual bisection waits at (one per store: a bisection holds the store's lock)."""
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO manual_waiting VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
                      (bid, role, xla, jax, os.getpid(), socket.gethostname(), time.time()))

    def clear_waiting(self) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM manual_waiting")

    def waiting(self) -> dict[str, Any] | None:
        """The probe a manual bisection waits at (or waited at, when it was killed there)."""
        r = self.conn.execute("SELECT * FROM manual_waiting WHERE slot=1").fetchone()
        return dict(r) if r else None

    def mark_waiting(self, verdict: str, source: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """A verdict (``hourly mark``) for the probe a manual bisection waits at, in one transaction:
        (the waiting row or None, the verdict already given there and not taken yet or None — then
        nothing is added)."""
        with self.transaction() as c:
            w = c.execute("SELECT * FROM manual_waiting WHERE slot=1").fetchone()
            if w is None:
                return None, None
            pending = c.execute("SELECT * FROM manual_marks WHERE bisection=? AND role=? AND xla=? AND jax=?"
                                " AND taken=0 ORDER BY id LIMIT 1", (w["bisection"], w["role"], w["xla"], w["jax"])
                                ).fetchone()
            if pending is not None:
                return dict(w), dict(pending)
            c.execute("INSERT INTO manual_marks (bisection, role, xla, jax, verdict, source, created)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?)", (w["bisection"], w["role"], w["xla"], w["jax"], verdict, source,
                                                        time.time()))
            return dict(w), None

    def given_mark(self, bid: int, role: str, xla: str, jax: str) -> dict[str, Any] | None:
        """The oldest verdict ``hourly mark`` gave for that probe and not taken yet (it stays there
        until :meth:`took_mark`: a bisection killed in between takes it again when it resumes)."""
        r = self.conn.execute("SELECT * FROM manual_marks WHERE bisection=? AND role=? AND xla=? AND jax=? AND taken=0"
                              " ORDER BY id LIMIT 1", (bid, role, xla, jax)).fetchone()
        return dict(r) if r else None

    def took_mark(self, mark_id: int) -> None:
        """The verdict is in a probe row now: taken, and the probe no longer waited at."""
        with self.transaction() as c:
            c.execute("UPDATE manual_marks SET taken=1 WHERE id=?", (mark_id,))
            c.execute("DELETE FROM manual_waiting")

    # -- the release level (schema 5) -----------------------------------------------------------
    def add_release(self, bench_key: str, p: ReleasePoint) -> None:
        """One attempt at one jax release under ``bench_key`` (its own transaction)."""
        self.add_releases(bench_key, [p])

    def add_releases(self, bench_key: str, ps: list[ReleasePoint]) -> None:
        """One release's rows (one per named metric) in one transaction."""
        with self.transaction() as c:
            for p in ps:
                c.execute("INSERT INTO releases (bench_key, version, jaxlib, released, status, value, samples,"
                          " runs, installer, env, detail, created, metric) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (bench_key, p.version, p.jaxlib, p.released, p.status.value, p.value,
                           json.dumps(p.samples), json.dumps(p.runs), p.installer, p.env, p.detail, time.time(),
                           p.metric))

    def releases(self, bench_key: str, metric: str | None = "") -> dict[str, ReleasePoint]:
        """The latest stored attempt at every release under ``bench_key``, by version (of ``metric``:
        :func:`metric_rows`; ``''`` is the regex's one metric, every row of an older store)."""
        rows = self.conn.execute(f"SELECT * FROM releases WHERE bench_key=? AND {_METRIC_FILTER} ORDER BY id",
                                 (bench_key, metric, metric))
        return {r["version"]: ReleasePoint(r["version"], r["jaxlib"], r["released"], Status(r["status"]),
                                           r["value"], json.loads(r["samples"]), json.loads(r["runs"]),
                                           r["detail"], r["installer"], r["env"], r["metric"]) for r in rows}

    def release_metric_names(self, bench_key: str) -> list[str]:
        """The named metrics of the release level under ``bench_key``, in the order first recorded."""
        rows = self.conn.execute("SELECT metric, MIN(id) AS first FROM releases WHERE bench_key=? AND metric != ''"
                                 " GROUP BY metric ORDER BY first", (bench_key,))
        return [r[0] for r in rows]

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
        key, mode and window (``good_time``, ``bad_time``: unix times)."""
        rows = self.conn.execute("SELECT bench_key, mode, good_time, bad_time FROM bisections WHERE status!='done'"
                                 " ORDER BY id")
        return [dict(zip(("bench_key", "mode", "good_time", "bad_time"), r, strict=True)) for r in rows]

    def newest_bisection_key(self) -> str | None:
        """The measurement key of the bisection last started or updated (None: no bisection)."""
        r = self.conn.execute("SELECT bench_key FROM bisections ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        return r[0] if r else None

    # -- what each measurement key was made of --------------------------------------------------
    def note_measure_key(self, key: str, identity: dict[str, Any]) -> None:
        """Remember what the measurement key ``key`` is made of (its public identity: the benchmark
        and the build, secrets redacted), so that an answer measured under it can be labelled with
        its build once another build is the current one (one transaction: runs may note at once)."""
        with self.transaction() as c:
            row = c.execute("SELECT value FROM settings WHERE name=?", (MEASURE_KEYS,)).fetchone()
            known = json.loads(row[0]) if row else {}
            if known.get(key) == identity:
                return
            known[key] = identity
            c.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (MEASURE_KEYS, json.dumps(known)))

    def measure_keys(self) -> dict[str, dict[str, Any]]:
        """{measurement key: its public identity} for every key noted (:meth:`note_measure_key`)."""
        return self.load_settings(MEASURE_KEYS) or {}

    # -- nightly (schema 3) --------------------------------------------------------------------
    def add_nightly(self, bench_key: str, p: NightlyPoint, level: str = "nightly") -> None:
        """One date's result; a date whose commits are known is also a point of ``level``."""
        self.add_nightlies(bench_key, [p], level)

    def add_nightlies(self, bench_key: str, ps: list[NightlyPoint], level: str = "nightly") -> None:
        """One date's rows (one per named metric) in one transaction."""
        with self.transaction() as c:
            for p in ps:
                c.execute("INSERT INTO nightly (bench_key, date, image, digest, status, value, samples, runs,"
                          " xla, jax, detail, created, metric) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (bench_key, p.date, p.image, p.digest, p.status.value, p.value, json.dumps(p.samples),
                           json.dumps(p.runs), p.xla, p.jax, p.detail, time.time(), p.metric))
                if p.xla and p.jax:
                    c.execute("INSERT OR REPLACE INTO points VALUES (?, ?, ?, ?)", (level, p.date, p.xla, p.jax))

    def nightly_points(self, bench_key: str, metric: str | None = "") -> dict[str, NightlyPoint]:
        """The latest stored result of every date under ``bench_key`` (of ``metric``: :func:`metric_rows`;
        ``''`` is the regex's one metric, every row of an older store)."""
        rows = self.conn.execute(f"SELECT * FROM nightly WHERE bench_key=? AND {_METRIC_FILTER} ORDER BY id",
                                 (bench_key, metric, metric))
        return {r["date"]: NightlyPoint(r["date"], r["image"], Status(r["status"]), r["digest"],
                                        r["value"], json.loads(r["samples"]), r["xla"], r["jax"],
                                        json.loads(r["runs"]), r["detail"], r["metric"]) for r in rows}

    def nightly_metric_names(self, bench_key: str) -> list[str]:
        """The named metrics of the daily level under ``bench_key``, in the order first recorded."""
        rows = self.conn.execute("SELECT metric, MIN(id) AS first FROM nightly WHERE bench_key=? AND metric != ''"
                                 " GROUP BY metric ORDER BY first", (bench_key,))
        return [r[0] for r in rows]

    # -- hourly watch (schema 7) -----------------------------------------------------------------
    def watch_builds(self, watch: str) -> list[dict[str, Any]]:
        """Every build the watch ``watch`` found, in the order they arrived (``ident``, ``decision``
        decoded; ``decision`` None: not judged yet)."""
        rows = self.conn.execute("SELECT * FROM watch_builds WHERE watch=? ORDER BY seq", (watch,))
        out = []
        for r in rows:
            d = dict(r)
            d["ident"] = json.loads(d["ident"])
            d["decision"] = json.loads(d["decision"]) if d["decision"] else None
            out.append(d)
        return out

    def add_watch_builds(self, watch: str, builds: list[dict[str, Any]]) -> None:
        """New builds (``build``, ``time``, ``ident``, ``status``, ``detail``), after the known ones,
        in one transaction: a build found is never found twice."""
        now = time.time()
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) FROM watch_builds WHERE watch=?", (watch,)).fetchone()[0]
            for b in builds:
                seq += 1
                c.execute("INSERT OR IGNORE INTO watch_builds (watch, build, seq, time, ident, status, detail,"
                          " decision, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                          (watch, b["build"], seq, b.get("time"), json.dumps(b.get("ident") or {}),
                           b.get("status", "pending"), b.get("detail"), now, now))

    def measured_watch_build(self, watch: str, build: str, status: str, detail: str | None,
                             ident: dict[str, Any], values: dict[str, dict[str, Any]]) -> None:
        """A build's measurement on arrival: its status, and per metric its value, samples and runs,
        in one transaction (a run killed midway measures the build again)."""
        now = time.time()
        with self.transaction() as c:
            for metric, v in values.items():
                c.execute("INSERT OR REPLACE INTO watch_values (watch, build, metric, value, samples, runs, created)"
                          " VALUES (?, ?, ?, ?, ?, ?, ?)", (watch, build, metric, v.get("value"),
                                                            json.dumps(v.get("samples") or []),
                                                            json.dumps(v.get("runs") or []), now))
            c.execute("UPDATE watch_builds SET status=?, detail=?, ident=?, updated=? WHERE watch=? AND build=?",
                      (status, detail, json.dumps(ident), now, watch, build))

    def watch_values(self, watch: str) -> dict[str, dict[str, dict[str, Any]]]:
        """{build: {metric: {value, samples, runs}}} of the watch's arrivals."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for r in self.conn.execute("SELECT * FROM watch_values WHERE watch=?", (watch,)):
            out.setdefault(r["build"], {})[r["metric"]] = {"value": r["value"], "samples": json.loads(r["samples"]),
                                                          "runs": json.loads(r["runs"])}
        return out

    def judged_watch_build(self, watch: str, build: str, decision: dict[str, Any]) -> None:
        """The decision on a build's arrival, per metric: it is judged, and never judged again."""
        with self.transaction() as c:
            c.execute("UPDATE watch_builds SET decision=?, updated=? WHERE watch=? AND build=?",
                      (json.dumps(decision), time.time(), watch, build))

    def watch_check(self, watch: str, metric: str, arrived: str, before: str, after: str,
                    suspect: dict[str, Any]) -> dict[str, Any]:
        """The check of a step suspected on ``arrived``'s arrival between ``before`` and ``after``:
        found, else made (verdict ``pending``): a run killed while confirming it goes on with it."""
        with self.transaction() as c:
            r = c.execute("SELECT * FROM watch_checks WHERE watch=? AND metric=? AND arrived=? AND before=?"
                          " AND after=?", (watch, metric, arrived, before, after)).fetchone()
            if r is None:
                now = time.time()
                cur = c.execute("INSERT INTO watch_checks (watch, metric, arrived, before, after, suspect, verdict,"
                                " result, created, updated) VALUES (?, ?, ?, ?, ?, ?, 'pending', NULL, ?, ?)",
                                (watch, metric, arrived, before, after, json.dumps(suspect), now, now))
                r = c.execute("SELECT * FROM watch_checks WHERE id=?", (_inserted_id(cur),)).fetchone()
        return _check(r)

    def watch_checks(self, watch: str) -> list[dict[str, Any]]:
        """Every check of the watch, oldest first (``suspect`` and ``result`` decoded)."""
        return [_check(r) for r in self.conn.execute("SELECT * FROM watch_checks WHERE watch=? ORDER BY id", (watch,))]

    def add_watch_run(self, check_id: int, old: float | None, new: float | None) -> None:
        """One interleaved pair of a check: the build before the step run, then the build after it."""
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM watch_runs WHERE check_id=?",
                            (check_id,)).fetchone()[0]
            c.execute("INSERT INTO watch_runs (check_id, seq, old, new, created) VALUES (?, ?, ?, ?, ?)",
                      (check_id, seq, old, new, time.time()))

    def watch_runs(self, check_id: int) -> list[tuple[float | None, float | None]]:
        rows = self.conn.execute("SELECT old, new FROM watch_runs WHERE check_id=? ORDER BY seq", (check_id,))
        return [(r[0], r[1]) for r in rows]

    def finish_watch_check(self, check_id: int, verdict: str, result: dict[str, Any]) -> None:
        with self.transaction() as c:
            c.execute("UPDATE watch_checks SET verdict=?, result=?, updated=? WHERE id=?",
                      (verdict, json.dumps(result), time.time(), check_id))

    def watch_alert(self, watch: str, arrived: str, before: str, after: str, checks: list[int]) -> tuple[dict[str, Any], bool]:
        """The alert of ``arrived``'s arrival over the window ``before`` .. ``after``: found, else made
        with the event ``new`` to deliver; (the alert, whether it was made now)."""
        with self.transaction() as c:
            r = c.execute("SELECT * FROM watch_alerts WHERE watch=? AND arrived=? AND before=? AND after=?",
                          (watch, arrived, before, after)).fetchone()
            made = r is None
            if made:
                now = time.time()
                cur = c.execute("INSERT INTO watch_alerts (watch, arrived, before, after, checks, hunt, recovery,"
                                " events, created, updated) VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)",
                                (watch, arrived, before, after, json.dumps(checks), json.dumps(["new"]), now, now))
                r = c.execute("SELECT * FROM watch_alerts WHERE id=?", (_inserted_id(cur),)).fetchone()
        return _alert(r), made

    def watch_alerts(self, watch: str) -> list[dict[str, Any]]:
        """Every alert of the watch, oldest first (``checks``, ``hunt``, ``recovery``, ``events`` decoded)."""
        return [_alert(r) for r in self.conn.execute("SELECT * FROM watch_alerts WHERE watch=? ORDER BY id", (watch,))]

    def update_watch_alert(self, alert_id: int, *, hunt: dict[str, Any] | None = None,
                           recovery: dict[str, Any] | None = None, add_events: tuple[str, ...] | list[str] = (),
                           events: list[str] | None = None) -> None:
        """What is known of an alert now: its hunt, its recovery; events to deliver added (``add_events``)
        or replaced (``events``: what is left after a delivery)."""
        with self.transaction() as c:
            r = c.execute("SELECT * FROM watch_alerts WHERE id=?", (alert_id,)).fetchone()
            if r is None:
                return
            a = _alert(r)
            left = list(a["events"] if events is None else events)
            left += [e for e in add_events if e not in left]
            c.execute("UPDATE watch_alerts SET hunt=?, recovery=?, events=?, updated=? WHERE id=?",
                      (json.dumps(hunt if hunt is not None else a["hunt"]),
                       json.dumps(recovery if recovery is not None else a["recovery"]),
                       json.dumps(left), time.time(), alert_id))


#: how to start afresh, for a store that cannot be used
_NEW_STORE = "start a new one with another --workdir, or move the file away (mv {path} {path}.bad) and run again"


def _create(path: Path) -> None:
    """A new, empty store, made under a temporary name and linked into place whole: a run starting
    at the same moment sees no store or a whole one, never a file of 0 bytes (which is refused)."""
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    conn = None
    try:
        conn = sqlite3.connect(tmp, isolation_level=None, factory=_Connection)
        conn.store_path = path
        conn.execute("PRAGMA journal_mode=WAL")  # writes the header: the file is a store from now on
        conn.close()
        conn = None
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another run made it meanwhile: theirs is used
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        if conn is not None:
            conn.close()
        for name in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            name.unlink(missing_ok=True)


def _check_empty(path: Path) -> None:
    """Refuse a store that is empty (0 bytes: SQLite would silently write a new schema into it)."""
    wal = Path(f"{path}-wal")
    if path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size):
        raise UserError(f"the results store {path} is empty (0 bytes)",
                        _NEW_STORE.format(path=path))


def _check_whole(path: Path, conn: sqlite3.Connection | None = None) -> None:
    """Refuse a store that is empty (0 bytes: SQLite would silently write a new schema into it) or
    damaged (garbage, truncated), reading only (through ``conn`` when given: a read-only one)."""
    _check_empty(path)
    own = conn is None
    if conn is None:
        conn = sqlite3.connect(path, timeout=30)
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as e:
        fault = store_fault(path, e)
        if fault is e:
            raise
        raise fault from e
    finally:
        if own:
            conn.close()
    if row and row[0] != "ok":  # SQLite's report can span lines ("*** in database main ***", then the fault)
        what = " ".join(ln.strip() for ln in str(row[0]).splitlines() if ln.strip() and not ln.startswith("***"))
        raise UserError(f"the results store {path} is damaged ({what or 'integrity check failed'})",
                        _NEW_STORE.format(path=path))


#: The tables every store of schema version 1 has (the tables _SCHEMA gained later without a
#: migration, manual_waiting and manual_marks, may be missing from an older store: it gets them).
_V1_TABLES = ("meta", "settings", "points", "builds", "measurements")


def schema_tables(version: int) -> set[str]:
    """The tables a store of schema ``version`` has: version 1's, then each migration's creations,
    renames and drops."""
    tables = set(_V1_TABLES)
    for v in range(2, version + 1):
        for stmt in MIGRATIONS.get(v, []):
            if m := re.match(r"\s*CREATE TABLE (?:IF NOT EXISTS )?(\w+)", stmt):
                tables.add(m[1])
            elif m := re.match(r"\s*ALTER TABLE (\w+) RENAME TO (\w+)", stmt):
                tables.discard(m[1])
                tables.add(m[2])
            elif m := re.match(r"\s*DROP TABLE (?:IF EXISTS )?(\w+)", stmt):
                tables.discard(m[1])
    return tables


def _check_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse, reading only, a store whose file is whole but lacks a table of its schema version
    (a dropped ``points`` table read as an empty scan, and was created again): it is damaged."""
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not have:
        return  # a new store: the schema is made next
    if "meta" in have:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if not row or not str(row[0]).isdigit():
            return  # another run is making it right now (its version is written once _SCHEMA is whole)
        lost = sorted(schema_tables(min(int(row[0]), SCHEMA_VERSION)) - have)
    else:
        lost = ["meta"]  # _SCHEMA makes meta first: tables without it are what is left of a store
    if lost:
        raise UserError(f"the results store {path} is damaged (its table{'s' if len(lost) > 1 else ''} "
                        f"{', '.join(lost)} {'are' if len(lost) > 1 else 'is'} missing)",
                        _NEW_STORE.format(path=path))


def _sqlite_kind(e: sqlite3.Error) -> str:
    name = getattr(e, "sqlite_errorname", None)  # Python 3.11+
    if name:
        return name
    text = str(e).lower()
    for words, kind in (("not a database", "SQLITE_NOTADB"), ("malformed", "SQLITE_CORRUPT"),
                        ("disk is full", "SQLITE_FULL"), ("disk i/o error", "SQLITE_IOERR"),
                        ("readonly", "SQLITE_READONLY"), ("unable to open", "SQLITE_CANTOPEN")):
        if words in text:
            return kind
    return ""


def store_fault(path: str | os.PathLike, e: sqlite3.Error) -> UserError | sqlite3.Error:
    """The SQLite error as one line naming the store and the fix, when it is the file's or the
    disk's fault (damage, a full disk, a read-only file); else ``e`` itself."""
    kind = _sqlite_kind(e)
    if kind.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return UserError(f"the results store {path} is damaged ({e})", _NEW_STORE.format(path=path))
    if kind == "SQLITE_FULL":
        return UserError(f"no space left on the device of the results store {path}",
                         "free space there, or pass --workdir with a folder on another disk")
    if kind.startswith("SQLITE_READONLY"):
        return UserError(f"the results store {path} is read-only ({e})",
                         "make it and its folder writable, or pass another --workdir")
    if kind.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return UserError(f"cannot read or write the results store {path} ({e})",
                         "check the disk and free space there, or pass another --workdir")
    return e


class _Connection(sqlite3.Connection):
    """A connection whose file and disk faults (:func:`store_fault`) name the store."""

    store_path: Path

    def _call(self, run: Callable[[], sqlite3.Cursor]) -> sqlite3.Cursor:
        """``run()``, its file and disk faults raised as :func:`store_fault`'s one line."""
        try:
            return run()
        except sqlite3.Error as e:
            fault = store_fault(getattr(self, "store_path", "?"), e)
            if fault is e:
                raise
            raise fault from e

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self._call(lambda: super(_Connection, self).execute(*args, **kwargs))

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self._call(lambda: super(_Connection, self).executemany(*args, **kwargs))

    def executescript(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self._call(lambda: super(_Connection, self).executescript(*args, **kwargs))


def _inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid of the row the cursor's INSERT just made."""
    assert cur.lastrowid is not None  # sqlite3 sets it on every INSERT
    return cur.lastrowid


def _check(r: sqlite3.Row) -> dict[str, Any]:
    d = dict(r)
    d["suspect"] = json.loads(d["suspect"])
    d["result"] = json.loads(d["result"]) if d["result"] else None
    return d


def _alert(r: sqlite3.Row) -> dict[str, Any]:
    d = dict(r)
    for k in ("checks", "hunt", "recovery", "events"):
        d[k] = json.loads(d[k]) if d[k] else ([] if k in ("checks", "events") else None)
    return d


def _measurement(r: sqlite3.Row) -> Measurement:
    return Measurement(r["xla"], r["jax"], r["status"], r["value"], json.loads(r["samples"]),
                       json.loads(r["runs"]), r["detail"], r["origin"], r["id"], r["created"], r["metric"])


#: The rows of one metric (two parameters: the metric twice; None: every row). A named metric's
#: rows and the ``''`` rows of the same key: with named metrics, a measurement that measured no
#: name (a failed build, runs that all failed) is one ``''`` row and holds for every metric; with
#: the regex's one metric every row is ``''``.
_METRIC_FILTER = "(? IS NULL OR metric IN (?, ''))"


def metric_rows(rows: list[Measurement], metric: str | None) -> list[Measurement]:
    """The same filter as the store's, over rows already read."""
    return rows if metric is None else [m for m in rows if m.metric in (metric, "")]


#: Schema changes after version 1: {version: [statements]}. Version 1 is _SCHEMA itself.
MIGRATIONS: dict[int, list[str]] = {
    1: [],
    # 2: bisections and their probes, so a killed `hourly bisect` continues where it stopped
    2: [
        """CREATE TABLE IF NOT EXISTS bisections (
            id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, bench_key TEXT NOT NULL,
            mode TEXT NOT NULL, good_time INTEGER NOT NULL, bad_time INTEGER NOT NULL,
            good_xla TEXT NOT NULL, good_jax TEXT NOT NULL, bad_xla TEXT NOT NULL, bad_jax TEXT NOT NULL,
            status TEXT NOT NULL, result TEXT, created REAL NOT NULL, updated REAL NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS bisect_probes (
            bisection INTEGER NOT NULL REFERENCES bisections (id), seq INTEGER NOT NULL,
            role TEXT NOT NULL, xla TEXT NOT NULL, jax TEXT NOT NULL, verdict TEXT NOT NULL,
            partial INTEGER NOT NULL, reason TEXT, samples TEXT NOT NULL, returncodes TEXT NOT NULL, builds INTEGER NOT NULL,
            runs INTEGER NOT NULL, created REAL NOT NULL, PRIMARY KEY (bisection, seq))""",
    ],
    # 3: results of `hourly nightly`, one row per (benchmark key, date) attempt; see hourly/nightly/plan.py
    3: ["""CREATE TABLE IF NOT EXISTS nightly (
            id INTEGER PRIMARY KEY AUTOINCREMENT, bench_key TEXT NOT NULL, date TEXT NOT NULL,
            image TEXT NOT NULL, digest TEXT, status TEXT NOT NULL, value REAL,
            samples TEXT NOT NULL, runs TEXT NOT NULL, xla TEXT, jax TEXT, detail TEXT,
            created REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS nightly_date ON nightly (bench_key, date)"],
    # 4: builds keyed by the build's identity (pair + command + environment + Python ABI), not the
    # pair alone. Rows of older stores keep their pair under a key no identity has ("pair:<xla>-<jax>"):
    # how they were built is unknown, so they are never reused as a verdict for a build identity.
    4: ["ALTER TABLE builds RENAME TO builds_v3",
        """CREATE TABLE builds (
            build_key TEXT PRIMARY KEY, xla TEXT NOT NULL, jax TEXT NOT NULL, status TEXT NOT NULL,
            in_place INTEGER NOT NULL, wheels TEXT NOT NULL, log_path TEXT, tail TEXT, duration REAL,
            finished REAL NOT NULL, identity TEXT)""",
        """INSERT INTO builds SELECT 'pair:' || xla || '-' || jax, xla, jax, status, in_place, wheels,
            log_path, tail, duration, finished, NULL FROM builds_v3""",
        "DROP TABLE builds_v3",
        "CREATE INDEX IF NOT EXISTS builds_pair ON builds (xla, jax)"],
    # 5: the release level: one row per (benchmark key, jax release) attempt; see hourly/releases/plan.py
    5: ["""CREATE TABLE IF NOT EXISTS releases (
            id INTEGER PRIMARY KEY AUTOINCREMENT, bench_key TEXT NOT NULL, version TEXT NOT NULL,
            jaxlib TEXT, released TEXT, status TEXT NOT NULL, value REAL, samples TEXT NOT NULL,
            runs TEXT NOT NULL, installer TEXT, env TEXT, detail TEXT, created REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS releases_version ON releases (bench_key, version)"],
    # 6: builds priced by their inputs (docs/builds.md): a probe's jaxlib builds and jax package builds apart
    6: ["ALTER TABLE bisect_probes ADD COLUMN jaxlib_builds INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE bisect_probes ADD COLUMN jax_builds INTEGER NOT NULL DEFAULT 0"],
    # 7: `hourly watch` (hourly/watch/): its builds, their values per metric, the checks of suspected steps with
    # their interleaved runs, and the alerts; tables of its own, apart from `measurements`
    7: ["""CREATE TABLE IF NOT EXISTS watch_builds (
            watch TEXT NOT NULL, build TEXT NOT NULL, seq INTEGER NOT NULL, time TEXT, ident TEXT NOT NULL,
            status TEXT NOT NULL, detail TEXT, decision TEXT, created REAL NOT NULL, updated REAL NOT NULL,
            PRIMARY KEY (watch, build))""",
        """CREATE TABLE IF NOT EXISTS watch_values (
            watch TEXT NOT NULL, build TEXT NOT NULL, metric TEXT NOT NULL, value REAL, samples TEXT NOT NULL,
            runs TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (watch, build, metric))""",
        """CREATE TABLE IF NOT EXISTS watch_checks (
            id INTEGER PRIMARY KEY AUTOINCREMENT, watch TEXT NOT NULL, metric TEXT NOT NULL, arrived TEXT NOT NULL,
            before TEXT NOT NULL, after TEXT NOT NULL, suspect TEXT NOT NULL, verdict TEXT NOT NULL, result TEXT,
            created REAL NOT NULL, updated REAL NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS watch_runs (
            check_id INTEGER NOT NULL REFERENCES watch_checks (id), seq INTEGER NOT NULL, old REAL, new REAL,
            created REAL NOT NULL, PRIMARY KEY (check_id, seq))""",
        """CREATE TABLE IF NOT EXISTS watch_alerts (
            id INTEGER PRIMARY KEY AUTOINCREMENT, watch TEXT NOT NULL, arrived TEXT NOT NULL, before TEXT NOT NULL,
            after TEXT NOT NULL, checks TEXT NOT NULL, hunt TEXT, recovery TEXT, events TEXT NOT NULL,
            created REAL NOT NULL, updated REAL NOT NULL)"""],
    # 8: every metric a run prints, named (--metrics): the metric of each row. Rows of older stores
    # are the one metric the regex read: '' (hourly.adapters.store.Measurement.metric)
    8: ["ALTER TABLE measurements ADD COLUMN metric TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE nightly ADD COLUMN metric TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE releases ADD COLUMN metric TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX IF NOT EXISTS measurements_metric ON measurements (bench_key, metric, xla, jax)",
        # and a probe's samples counted apart from its runs (process starts): many per run with
        # --metric-samples all or named metrics; 0 in the rows of an older store
        "ALTER TABLE bisect_probes ADD COLUMN run_samples INTEGER NOT NULL DEFAULT 0"],
}
