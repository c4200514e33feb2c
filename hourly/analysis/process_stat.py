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

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np

from hourly.analysis.detect import overflow_scale

#: the statistics a process's samples may be summarised by (:func:`reduce`)
STATISTICS = ("median", "p10", "trimmed")

#: each statistic in words (what a verdict says its processes were reduced by)
WORDS = {"median": "median", "p10": "10th percentile", "trimmed": "trimmed mean"}

#: samples a process gives before any cost is measured (a safe default)
DEFAULT_SAMPLES = 12
#: the bounds on the chosen number of samples per process
MIN_SAMPLES = 3
MAX_SAMPLES = 200


def reduce(samples: Sequence[float], statistic: str = "median") -> float:
    """One process's value from its samples, by ``statistic`` (one of :data:`STATISTICS`): the
    median, the 10th percentile (linear interpolation) or the mean of the middle half. One sample
    is its own value by every statistic."""
    return _reduce(tuple(samples), statistic)


# remembered: a verdict reduces the same processes again on every round (choose_statistic on the
# window's ends, ProcessValue.by), and numpy's median of a dozen samples costs ~50 µs each time
@functools.lru_cache(maxsize=4096)
def _reduce(samples: tuple[float, ...], statistic: str) -> float:
    a = np.sort(np.asarray(samples, dtype=float))
    if not len(a):
        raise ValueError("no samples")
    scale = overflow_scale(a)  # values near 1e308: averaged scaled by a power of two (exact)
    a = a * scale
    if statistic == "median":
        return float(np.median(a)) / scale
    if statistic == "p10":
        return float(np.quantile(a, 0.10)) / scale
    if statistic == "trimmed":  # the mean of the middle half
        k = len(a) // 4
        return float(a[k:len(a) - k].mean()) / scale
    raise ValueError(f"unknown statistic {statistic!r}")


class ProcessValue(float):
    """One process's value (its samples reduced by the statistic in force: the median until one is
    chosen) that keeps the samples, so that a verdict can reduce them again by the statistic chosen
    on the window's ends. Everywhere else it is the plain number."""

    samples: tuple[float, ...]

    def __new__(cls, value: float, samples: Sequence[float]) -> "ProcessValue":
        v = super().__new__(cls, value)
        v.samples = tuple(float(x) for x in samples)
        return v

    # pickles (a worker hands rounds back) as what it is
    def __reduce__(self) -> tuple[type[ProcessValue], tuple[float, tuple[float, ...]]]:
        return (ProcessValue, (float(self), self.samples))

    @classmethod
    def of(cls, samples: Sequence[float], statistic: str = "median") -> "ProcessValue":
        """A process's samples reduced by ``statistic``."""
        return cls(reduce(samples, statistic), samples)

    def by(self, statistic: str) -> "ProcessValue":
        """The same process reduced by ``statistic`` (itself when it holds one sample)."""
        if len(self.samples) <= 1:
            return self
        return ProcessValue(reduce(self.samples, statistic), self.samples)


def samples_of(value: float) -> tuple[float, ...]:
    """The samples behind a process's value: a :class:`ProcessValue`'s own, else the value alone."""
    return getattr(value, "samples", None) or (float(value),)


@functools.cache
def level_bound(alpha: float, candidates: int = 1, dof: int = 0) -> float:
    """The separation (standard errors) a difference must reach to be said at two-sided level
    ``alpha`` when it is the best of ``candidates`` statistics measured on the same rounds (the level
    shared among them: Bonferroni), on a noise estimate of ``dof`` degrees of freedom (0: known; else
    the Student-t quantile, whose tails at few degrees of freedom are far wider than the normal's)."""
    q = alpha / (2.0 * max(candidates, 1))
    if dof > 0:
        from scipy import stats  # here, not at the top: scipy.stats costs a process ~1 s to import
        return float(stats.t.isf(q, dof))
    return float(NormalDist().inv_cdf(1.0 - q))


@functools.cache
def selection_bound(base: float, candidates: int, dof: int = 0) -> float:
    """The separation (standard errors) two ends must reach when the statistic was chosen among
    ``candidates`` on those same ends, so that taking the one that separates them best does not make
    ends that do not differ read as different more often than ``base`` standard errors of one
    statistic would: the two-sided level of ``base`` shared among the candidates (Bonferroni). On a
    noise estimate of ``dof`` degrees of freedom (0: known) both are Student-t levels: with the few
    rounds a window's ends start with, ``base`` = 3 is a level of 9.5 % at 2 degrees of freedom, and
    its third needs 5.4 standard errors, not the 3.3 of the normal's. (The ends' verdict before it
    held a stated rate over its looks: hourly.analysis.judges.paired ``ends_bound``.)"""
    if candidates <= 1:
        return base
    if dof > 0:
        from scipy import stats  # here, not at the top: scipy.stats costs a process ~1 s to import
        return level_bound(2.0 * float(stats.t.sf(base, dof)), candidates, dof)
    return level_bound(2.0 * (1.0 - NormalDist().cdf(base)), candidates, 0)


@dataclass(frozen=True)
class Choice:
    """The per-process statistic chosen for a verdict, and why (said to the user). ``candidates``:
    how many statistics it was chosen among (1: no choice was made, every statistic gives the same
    value); ``separations``: each candidate's separation of the ends (t, paired by round)."""

    statistic: str
    why: str
    candidates: int = 1
    separations: tuple[tuple[str, float], ...] = ()

    def as_dict(self) -> dict:
        """What a bisection stores of it (with its ends' rows) and its answer states."""
        return {"statistic": self.statistic, "why": self.why, "candidates": self.candidates}

    @classmethod
    def stored(cls, d: dict) -> "Choice":
        """A choice stored by :meth:`as_dict` (a resumed search holds it)."""
        return cls(str(d["statistic"]), str(d.get("why") or ""), int(d.get("candidates") or 1))


#: the choice where nothing is chosen: one value per process, or too few processes
DEFAULT_CHOICE = Choice("median", "the default")


def _separation(g: np.ndarray, b: np.ndarray, paired: bool) -> float:
    """|t| of the ends' difference: paired by round (one process of each per round), else Welch's."""
    if paired:
        d = b - g
        sd = float(d.std(ddof=1))
        m = abs(float(d.mean()))
        return m / (sd / math.sqrt(len(d))) if sd > 0 else (math.inf if m > 0 else 0.0)
    se = math.sqrt(float(g.var(ddof=1)) / len(g) + float(b.var(ddof=1)) / len(b))
    m = abs(float(b.mean() - g.mean()))
    return m / se if se > 0 else (math.inf if m > 0 else 0.0)


def choose_statistic(good: Sequence[Sequence[float]], bad: Sequence[Sequence[float]]) -> Choice:
    """The statistic to summarise each process by, chosen on a window's two ends (one list of
    samples per process each, the k-th of each from the same round), which are known to differ;
    held fixed for the probes after.

    Each candidate of :data:`STATISTICS` reduces every process to one value; the one whose paired
    difference of the ends (on a log scale when every value is positive) is the most standard
    errors from zero wins — the statistic that follows this benchmark's change best against its
    noise (a low quantile where the samples are bimodal or skewed to the slow side, the median or
    the trimmed mean where they are not). Ties go to the earlier in :data:`STATISTICS` (the median).
    Taking the best of several on the same ends inflates their evidence: the ends' verdict made by
    it shares each look's part of its false rate among ``candidates`` (:func:`level_bound`, from
    hourly.analysis.judges.paired's ``ends_bound``); the probes after are judged on fresh processes
    by the statistic held fixed."""
    if not good or not bad:
        return DEFAULT_CHOICE
    if all(len(p) <= 1 for p in (*good, *bad)):
        return Choice("median", "one sample per process: every statistic is that sample")
    if min(len(good), len(bad)) < 2:
        return Choice("median", "too few processes of each end to compare statistics")
    paired = len(good) == len(bad)
    seps: list[tuple[str, float]] = []
    # a t-statistic does not change with the unit: values near 1e308 are compared scaled by a power
    # of two, whose differences, means and squares do not overflow
    k = overflow_scale([x for p in (*good, *bad) for x in p])
    for s in STATISTICS:
        g = np.array([reduce(p, s) for p in good]) * k
        b = np.array([reduce(p, s) for p in bad]) * k
        if min(g.min(), b.min()) > 0:
            g, b = np.log(g), np.log(b)
        seps.append((s, _separation(g, b, paired)))
    best = max(seps, key=lambda x: x[1])  # max keeps the first of equals: the median
    said = ", ".join(f"{WORDS[s]} {t:.1f}" for s, t in seps)
    return Choice(best[0], f"it separates the ends best (paired t: {said})",
                  len(STATISTICS), tuple(seps))


@dataclass(frozen=True)
class Cost:
    """What a process costs, from ``processes`` processes: the seconds its samples do not account
    for (``fixed``: opening the chip, imports, set-up before the first sample, and ``after`` of them
    from the last sample to the process's exit) and seconds per sample; ``first``: the seconds to
    the first sample alone, as measured (None: not kept apart)."""

    fixed: float
    per_sample: float
    processes: int
    after: float = 0.0
    first: float | None = None


def variance_components(processes: Sequence[Sequence[float]], statistic: str | None = None) -> tuple[float, float]:
    """The within-process variance of one sample and the between-process variance of a process's
    level, from several processes of one state (one-way random effects, method of moments;
    between floored at 0): a process's value varies as ``between + within / n``.

    ``statistic`` (one of :data:`STATISTICS`): the value is that statistic of a process's samples,
    not their mean — ``within`` is then ``n`` times the statistic's own variance over a process's
    ``n`` samples (from its two halves, :func:`_within_of`), and ``between`` the spread of the
    processes' values by it less that. A few slow samples (a collector every few iterations) inflate the
    samples' variance but hardly move a median or a 10th percentile: read as the samples' variance,
    they asked for two to three times the samples a process needs."""
    groups = [np.asarray(p, dtype=float) for p in processes if len(p) >= 2]
    if len(groups) < 2:
        return float("nan"), float("nan")
    n = float(np.mean([len(g) for g in groups]))
    if statistic is None:
        within = float(np.mean([g.var(ddof=1) for g in groups]))
        values = np.array([g.mean() for g in groups])
    else:
        within = float(np.mean([_within_of(tuple(g.tolist()), statistic) for g in groups]))
        values = np.array([reduce(g.tolist(), statistic) for g in groups])
    between = max(float(values.var(ddof=1)) - within / n, 0.0)
    return within, between


@functools.lru_cache(maxsize=4096)
def _within_of(samples: tuple[float, ...], statistic: str) -> float:
    """``n`` times the variance of ``statistic`` over ``n`` samples of this process, from its two
    halves (the first ``n/2`` samples and the rest): each half's statistic varies as ``2·within/n``
    around the process's level, so their difference's square is ``4·within/n`` on average. Halves
    in the order the samples came keep whatever pattern a process's samples have (every other one
    slow, a collector every few): resampling them as if independent overstated a trimmed mean's
    variance where the slow samples alternate. Fewer than 4 samples: their variance."""
    n = len(samples)
    if n < 4:
        return float(np.var(samples, ddof=1))
    h = n // 2
    d = reduce(samples[:h], statistic) - reduce(samples[h:2 * h], statistic)
    return n * d * d / 4.0


def between_floor(within: float, samples: float, processes: int) -> float:
    """The between-process variance that ``processes`` processes of ``samples`` samples each cannot
    tell from none: one standard error of its estimate where it is none (``within / samples ·
    sqrt(2 / (processes − 1))``). A between estimate below it is that much uncertain, not small:
    floored there, a few processes whose levels happen to agree do not send the samples per process
    to the upper bound; as processes come in the floor falls and n rises only as the data allow."""
    if processes < 2 or samples <= 0 or not math.isfinite(within):
        return float("nan")
    return within / samples * math.sqrt(2.0 / (processes - 1))


def samples_per_process(cost: Cost, within: float, between: float,
                        lo: int = MIN_SAMPLES, hi: int = MAX_SAMPLES, *, floor: float = 0.0) -> int:
    """The samples per process that buy the most precision per second of the machine (see the
    module's text), bounded by ``lo`` and ``hi``; :data:`DEFAULT_SAMPLES` while a figure is missing.
    ``floor``: the least between-process variance believed (:func:`between_floor` of the processes
    the figures come from); without one, a between of 0 asks for ``hi``."""
    if not (cost.per_sample > 0 and cost.fixed >= 0 and within >= 0 and math.isfinite(within)
            and math.isfinite(between)):
        return DEFAULT_SAMPLES
    if math.isfinite(floor):
        between = max(between, floor)
    if between <= 0:
        return hi
    n = math.sqrt(cost.fixed / cost.per_sample * within / between)
    return int(min(max(round(n), lo), hi))
