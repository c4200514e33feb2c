"""What one benchmark process costs and what its samples say: the per-process statistic, the
two-level noise (within a process, between processes) and how many samples a process should give.

Pure numbers, no I/O: the drivers (hourly.bisect) measure the costs and hand the samples in.

Where a process is expensive (an accelerator: seconds to open the chip before the first sample)
and a sample cheap, the precision bought per chip-second depends on how many samples each process
gives. For two-level noise — a process's samples scatter with variance ``within`` around the
process's own level, which scatters between processes with variance ``between`` — the variance of
a state's level from ``p`` processes of ``n`` samples is ``(between + within / n) / p`` and its
cost ``p · (fixed + n · per_sample)``; their product is least at
``n* = sqrt(fixed / per_sample · within / between)`` (:func:`samples_per_process`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: the statistics a process's samples may be summarised by (:func:`reduce`)
STATISTICS = ("median", "p10", "trimmed")

#: samples a process gives before any cost is measured (a safe default)
DEFAULT_SAMPLES = 12
#: the bounds on the chosen number of samples per process
MIN_SAMPLES = 3
MAX_SAMPLES = 200


def reduce(samples: Sequence[float], statistic: str = "median") -> float:
    """One process's value from its samples, by ``statistic`` (one of :data:`STATISTICS`)."""
    a = np.sort(np.asarray(samples, dtype=float))
    if not len(a):
        raise ValueError("no samples")
    if statistic == "median":
        return float(np.median(a))
    if statistic == "p10":
        return float(np.quantile(a, 0.10))
    if statistic == "trimmed":  # the mean of the middle half
        k = len(a) // 4
        return float(a[k:len(a) - k].mean())
    raise ValueError(f"unknown statistic {statistic!r}")


@dataclass(frozen=True)
class Choice:
    """The per-process statistic chosen for a verdict, and why (said to the user)."""

    statistic: str
    why: str


def choose_statistic(good: Sequence[Sequence[float]], bad: Sequence[Sequence[float]]) -> Choice:
    """The statistic to summarise each process by, chosen on a window's two ends (one list of
    samples per process each), which are known to differ; held fixed for the probes after."""
    return Choice("median", "the default")


@dataclass(frozen=True)
class Cost:
    """What a process costs: seconds from its start to its first sample (``fixed``: opening the
    chip, imports, set-up) and seconds per sample after it, from ``processes`` processes."""

    fixed: float
    per_sample: float
    processes: int


def variance_components(processes: Sequence[Sequence[float]]) -> tuple[float, float]:
    """The within-process variance of one sample and the between-process variance of a process's
    level, from several processes of one state (one-way random effects, method of moments;
    between floored at 0)."""
    groups = [np.asarray(p, dtype=float) for p in processes if len(p) >= 2]
    if len(groups) < 2:
        return float("nan"), float("nan")
    within = float(np.mean([g.var(ddof=1) for g in groups]))
    n = float(np.mean([len(g) for g in groups]))
    means = np.array([g.mean() for g in groups])
    between = max(float(means.var(ddof=1)) - within / n, 0.0)
    return within, between


def samples_per_process(cost: Cost, within: float, between: float,
                        lo: int = MIN_SAMPLES, hi: int = MAX_SAMPLES) -> int:
    """The samples per process that buy the most precision per second of the machine (see the
    module's text), bounded by ``lo`` and ``hi``; :data:`DEFAULT_SAMPLES` while a figure is missing."""
    if not (cost.per_sample > 0 and within >= 0 and math.isfinite(within) and math.isfinite(between)):
        return DEFAULT_SAMPLES
    if between <= 0:
        return hi
    n = math.sqrt(cost.fixed / cost.per_sample * within / between)
    return int(min(max(round(n), lo), hi))
