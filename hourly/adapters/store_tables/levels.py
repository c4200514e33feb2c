"""The release level (schema 5) and the daily level (schema 3): one row per attempt at a release
or a date, per named metric."""

from __future__ import annotations

import json
import time

from hourly.adapters.store_tables.base import METRIC_FILTER, Tables
from hourly.model import NightlyPoint, ReleasePoint, Status


class LevelTables(Tables):
    """The ``releases`` and ``nightly`` tables."""

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
        rows = self.conn.execute(f"SELECT * FROM releases WHERE bench_key=? AND {METRIC_FILTER} ORDER BY id",
                                 (bench_key, metric, metric))
        return {r["version"]: ReleasePoint(r["version"], r["jaxlib"], r["released"], Status(r["status"]),
                                           r["value"], json.loads(r["samples"]), json.loads(r["runs"]),
                                           r["detail"], r["installer"], r["env"], r["metric"]) for r in rows}

    def releases_since(self, bench_key: str, since: float) -> set[str]:
        """The releases under ``bench_key`` with a row stored at ``since`` or later (a --rerun's own)."""
        rows = self.conn.execute("SELECT DISTINCT version FROM releases WHERE bench_key=? AND created>=?",
                                 (bench_key, since))
        return {r[0] for r in rows}

    def release_metric_names(self, bench_key: str) -> list[str]:
        """The named metrics of the release level under ``bench_key``, in the order first recorded."""
        rows = self.conn.execute("SELECT metric, MIN(id) AS first FROM releases WHERE bench_key=? AND metric != ''"
                                 " GROUP BY metric ORDER BY first", (bench_key,))
        return [r[0] for r in rows]

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
        rows = self.conn.execute(f"SELECT * FROM nightly WHERE bench_key=? AND {METRIC_FILTER} ORDER BY id",
                                 (bench_key, metric, metric))
        return {r["date"]: NightlyPoint(r["date"], r["image"], Status(r["status"]), r["digest"],
                                        r["value"], json.loads(r["samples"]), r["xla"], r["jax"],
                                        json.loads(r["runs"]), r["detail"], r["metric"]) for r in rows}

    def nightly_dates_since(self, bench_key: str, since: float) -> set[str]:
        """The dates under ``bench_key`` with a row stored at ``since`` or later (a --rerun's own)."""
        rows = self.conn.execute("SELECT DISTINCT date FROM nightly WHERE bench_key=? AND created>=?",
                                 (bench_key, since))
        return {r[0] for r in rows}

    def nightly_metric_names(self, bench_key: str) -> list[str]:
        """The named metrics of the daily level under ``bench_key``, in the order first recorded."""
        rows = self.conn.execute("SELECT metric, MIN(id) AS first FROM nightly WHERE bench_key=? AND metric != ''"
                                 " GROUP BY metric ORDER BY first", (bench_key,))
        return [r[0] for r in rows]

