"""The records the store reads and writes: a measurement, a build, and what building and measuring
write to (``Records``)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hourly.model import Status


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
    """What building and measuring write to: a :class:`hourly.adapters.store.Store`, or a Slurm job's
    :class:`hourly.worker.RecordingStore` that keeps the rows for the coordinator."""

    logs: Path

    def record_build(self, b: BuildRecord) -> None: ...

    def add_measurement(self, bench_key: str, m: Measurement) -> object: ...

    def add_measurements(self, bench_key: str, ms: list[Measurement]) -> object: ...

    def metric_names(self, bench_key: str) -> list[str]: ...


def measurement_of(r: sqlite3.Row) -> Measurement:
    """The :class:`Measurement` of a row of ``measurements``."""
    return Measurement(r["xla"], r["jax"], r["status"], r["value"], json.loads(r["samples"]),
                       json.loads(r["runs"]), r["detail"], r["origin"], r["id"], r["created"], r["metric"])


def metric_rows(rows: list[Measurement], metric: str | None) -> list[Measurement]:
    """The same filter as the store's (:data:`hourly.adapters.store_tables.base.METRIC_FILTER`),
    over rows already read."""
    return rows if metric is None else [m for m in rows if m.metric in (metric, "")]
