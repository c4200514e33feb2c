"""``hourly watch`` (schema 7, hourly/watch/): its builds, their values per metric, the checks of
suspected steps with their interleaved runs, and the alerts."""

from __future__ import annotations

import json
import time
from typing import Any

from hourly.adapters.store_tables.base import Tables, inserted_id
from hourly.watch_records import Alert, Build, Check, HuntOutcome


class WatchTables(Tables):
    """The ``watch_builds``, ``watch_values``, ``watch_checks``, ``watch_runs`` and ``watch_alerts`` tables,
    kept apart from ``measurements``: a series per metric name."""

    def watch_builds(self, watch: str) -> list[Build]:
        """Every build the watch ``watch`` found, in the order they arrived (``decision`` None: not
        judged yet)."""
        rows = self.conn.execute("SELECT * FROM watch_builds WHERE watch=? ORDER BY seq", (watch,))
        return [Build.from_json(dict(r)) for r in rows]

    def add_watch_builds(self, watch: str, builds: list[Build]) -> None:
        """New builds (``build``, ``time``, ``ident``, ``status``, ``detail``), after the known ones,
        in one transaction: a build found is never found twice."""
        now = time.time()
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) FROM watch_builds WHERE watch=?", (watch,)).fetchone()[0]
            for b in builds:
                seq += 1
                c.execute("INSERT OR IGNORE INTO watch_builds (watch, build, seq, time, ident, status, detail,"
                          " decision, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                          (watch, b.build, seq, b.time, json.dumps(b.ident or {}), b.status, b.detail, now, now))

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
                    suspect: dict[str, Any]) -> Check:
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
                r = c.execute("SELECT * FROM watch_checks WHERE id=?", (inserted_id(cur),)).fetchone()
        return Check.from_json(dict(r))

    def watch_checks(self, watch: str) -> list[Check]:
        """Every check of the watch, oldest first."""
        return [Check.from_json(dict(r)) for r in self.conn.execute("SELECT * FROM watch_checks WHERE watch=? ORDER BY id", (watch,))]

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

    def watch_alert(self, watch: str, arrived: str, before: str, after: str, checks: list[int]) -> tuple[Alert, bool]:
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
                r = c.execute("SELECT * FROM watch_alerts WHERE id=?", (inserted_id(cur),)).fetchone()
        return Alert.from_json(dict(r)), made

    def watch_alerts(self, watch: str) -> list[Alert]:
        """Every alert of the watch, oldest first."""
        return [Alert.from_json(dict(r)) for r in self.conn.execute("SELECT * FROM watch_alerts WHERE watch=? ORDER BY id", (watch,))]

    def update_watch_alert(self, alert_id: int, *, hunt: HuntOutcome | None = None,
                           recovery: dict[str, Any] | None = None, add_events: tuple[str, ...] | list[str] = (),
                           events: list[str] | None = None) -> None:
        """What is known of an alert now: its hunt, its recovery; events to deliver added (``add_events``)
        or replaced (``events``: what is left after a delivery)."""
        with self.transaction() as c:
            r = c.execute("SELECT * FROM watch_alerts WHERE id=?", (alert_id,)).fetchone()
            if r is None:
                return
            a = Alert.from_json(dict(r))
            left = list(a.events if events is None else events)
            left += [e for e in add_events if e not in left]
            now = hunt if hunt is not None else a.hunt
            c.execute("UPDATE watch_alerts SET hunt=?, recovery=?, events=?, updated=? WHERE id=?",
                      (json.dumps(now.to_json() if now is not None else None),
                       json.dumps(recovery if recovery is not None else a.recovery),
                       json.dumps(left), time.time(), alert_id))
