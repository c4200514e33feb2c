"""What a scan keeps: the instants it planned, the builds, and every measurement of a pair."""

from __future__ import annotations

import json
import time

from hourly.adapters.store_tables.base import METRIC_FILTER, Tables, inserted_id
from hourly.adapters.store_tables.rows import BuildRecord, Measurement, measurement_of


class ScanTables(Tables):
    """The ``points``, ``builds`` and ``measurements`` tables (a measurement row is never updated)."""

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
                m.id = inserted_id(cur)
                m.created = now

    def latest(self, bench_key: str, xla: str, jax: str, origin: str | None = None,
               metric: str | None = None) -> Measurement | None:
        """The newest measurement of a pair (of ``origin`` alone when given; of ``metric`` when
        given: :func:`metric_rows`)."""
        r = self.conn.execute(
            "SELECT * FROM measurements WHERE bench_key=? AND xla=? AND jax=? AND (? IS NULL OR origin=?)"
            f" AND {METRIC_FILTER} ORDER BY id DESC LIMIT 1",
            (bench_key, xla, jax, origin, origin, metric, metric)).fetchone()
        return measurement_of(r) if r else None

    def all_latest(self, bench_key: str, origin: str | None = None,
                   metric: str | None = None) -> dict[tuple[str, str], Measurement]:
        """The newest measurement of every pair (of ``origin`` alone when given: the scan's table
        reads ``"scan"``, so a later command's rows never change it; of ``metric`` when given)."""
        rows = self.conn.execute("SELECT * FROM measurements WHERE bench_key=? AND (? IS NULL OR origin=?)"
                                 f" AND {METRIC_FILTER} ORDER BY id", (bench_key, origin, origin, metric, metric))
        return {(r["xla"], r["jax"]): measurement_of(r) for r in rows}

    def measured_since(self, bench_key: str, since: float, origin: str) -> set[tuple[str, str]]:
        """The pairs under ``bench_key`` with a row of ``origin`` stored at ``since`` or later (a
        --rerun's own)."""
        rows = self.conn.execute("SELECT DISTINCT xla, jax FROM measurements WHERE bench_key=? AND origin=?"
                                 " AND created>=?", (bench_key, origin, since))
        return {(r[0], r[1]) for r in rows}

    def measurements(self, bench_key: str, xla: str, jax: str, metric: str | None = None) -> list[Measurement]:
        """Every measurement of a pair, oldest first (of ``metric`` when given)."""
        rows = self.conn.execute(
            f"SELECT * FROM measurements WHERE bench_key=? AND xla=? AND jax=? AND {METRIC_FILTER} ORDER BY id",
            (bench_key, xla, jax, metric, metric))
        return [measurement_of(r) for r in rows]

    def metric_names(self, bench_key: str) -> list[str]:
        """The named metrics measured under ``bench_key``, in the order first recorded ([] for the
        regex's one metric)."""
        rows = self.conn.execute("SELECT metric, MIN(id) AS first FROM measurements WHERE bench_key=? AND metric != ''"
                                 " GROUP BY metric ORDER BY first", (bench_key,))
        return [r[0] for r in rows]

    def measured_keys(self, origin: str | None = None) -> dict[str, int]:
        """{measurement key: how many states were measured under it (of ``origin`` alone when given:
        ``"scan"``, the scans' rows)}, in the order first measured: a workdir scanned with one
        benchmark and then another holds both."""
        rows = self.conn.execute("SELECT bench_key, COUNT(DISTINCT xla || ' ' || jax), MIN(id) AS first"
                                 " FROM measurements WHERE (? IS NULL OR origin=?) GROUP BY bench_key ORDER BY first",
                                 (origin, origin))
        return {r[0]: r[1] for r in rows}
