"""Paired evidence: states measured in alternation, one process each per round, so that whatever the
machine does to all of them in that stretch of time (its load, its clocks, a neighbour) cancels.

A *round* (:data:`Block`) holds one value per state, each from its own process, the processes run
one after another (A B C, the next round C B A). The rounds of one verdict are its evidence: each
state's value in a round is taken relative to that round's common level (the mean of the round's
values, on a log scale when every value is positive: a machine that runs 10 % slower runs every
state 10 % slower), so a level that moves between rounds moves no difference between states — the
randomised complete block design. What is left is each process's own noise, estimated from the
spread of the centred values (:func:`noise_groups`).

Pure numbers, no verdict: the judge (hourly.analysis.judges.paired) decides on these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping, Sequence

import numpy as np

from hourly.analysis.detect import overflow_scale
from hourly.analysis.process_stat import ProcessValue, samples_of
from hourly.analysis.samples import hodges_lehmann, location, location_se, pooled_sigma

#: one round: state -> the value its process printed in that round (None: the run failed); a
#: process that printed several samples is a :class:`~hourly.analysis.process_stat.ProcessValue`
#: (its samples kept, for :meth:`Paired.reduced`)
Block = Mapping[int, "float | None"]


def log_scale(values: Iterable[float]) -> bool:
    """Whether values are compared as ratios (every one positive: a log scale), else as differences."""
    vals = list(values)
    return bool(vals) and all(v > 0 for v in vals)


def rows(blocks: Sequence[Mapping], states: Sequence) -> list[list[float]]:
    """The rounds that hold a value of every one of ``states`` (in their order); a round where one
    of them failed says nothing about the others' difference and is left out."""
    return [[float(v) for v in vals] for vals in _complete(blocks, states)]


def _complete(blocks: Sequence[Mapping], states: Sequence) -> list[list]:
    out = []
    for b in blocks:
        vals = [b.get(s) for s in states]
        if all(v is not None for v in vals):
            out.append(vals)
    return out


@dataclass(frozen=True)
class Paired:
    """The rounds of one verdict over ``states``, centred: ``centred[k]`` is state ``states[k]``'s
    value in each round less that round's common level (on ``log`` scale when every value is
    positive). The difference of two states' locations is their paired difference; ``level[k]`` is
    each state's own location in the original units (for words and for context)."""

    states: tuple
    log: bool
    centred: tuple[tuple[float, ...], ...]
    level: tuple[float, ...]
    rounds: int
    values: tuple[tuple[float, ...], ...] = ()  # each state's values in the rounds, as measured
    #: each state's processes' samples in the rounds (one tuple a process: a value alone when its
    #: process printed one), and the statistic each process was reduced by
    samples: tuple[tuple[tuple[float, ...], ...], ...] = ()
    statistic: str = "median"

    @classmethod
    def of(cls, blocks: Sequence[Mapping], states: Sequence, log: bool | None = None) -> "Paired":
        full = _complete(blocks, states)
        r = [[float(v) for v in vals] for vals in full]
        if log is None:
            log = log_scale(v for row in r for v in row)
        m = np.asarray(r, float).reshape(len(r), len(states))
        k = 1.0 if log else overflow_scale(m)  # a round's mean of values near 1e308: scaled (exact)
        t = np.log(m) if log else m * k
        c = (t - t.mean(axis=1, keepdims=True) if len(r) else t) / k
        levels = tuple(location(m[:, k]) if len(r) else float("nan") for k in range(len(states)))
        samples = tuple(tuple(samples_of(vals[k]) for vals in full) for k in range(len(states)))
        return cls(tuple(states), log, tuple(tuple(float(x) for x in c[:, k]) for k in range(len(states))), levels,
                   len(r), tuple(tuple(float(x) for x in m[:, k]) for k in range(len(states))), samples)

    def processes(self, s: Hashable) -> list[tuple[float, ...]]:
        """State ``s``'s processes in these rounds, each its samples."""
        return list(self.samples[self.states.index(s)]) if self.samples else [(v,) for v in self.raw(s)]

    def reduced(self, statistic: str) -> "Paired":
        """The same rounds with every process reduced by ``statistic``
        (hourly.analysis.process_stat.reduce): itself when no process printed more than one sample."""
        if statistic == self.statistic or all(len(p) <= 1 for col in self.samples for p in col):
            return self
        blocks = [{s: ProcessValue.of(self.samples[k][r], statistic) for k, s in enumerate(self.states)}
                  for r in range(self.rounds)]
        out = Paired.of(blocks, self.states, self.log)
        return Paired(out.states, out.log, out.centred, out.level, out.rounds, out.values, out.samples, statistic)

    def of_state(self, s: Hashable) -> list[float]:
        return list(self.centred[self.states.index(s)])

    def raw(self, s: Hashable) -> list[float]:
        return list(self.values[self.states.index(s)])

    def difference(self, x: Hashable, y: Hashable) -> float:
        """``y``'s level against ``x``'s in these rounds: the difference of their Hodges–Lehmann
        locations, as a ratio less one (log scale) or in the metric's units."""
        d = hodges_lehmann(self.of_state(y)) - hodges_lehmann(self.of_state(x))
        return math.expm1(d) if self.log else d

    def noise_groups(self) -> tuple[list[list[float]], int]:
        """Each state's centred values scaled to one process's noise (a value centred on the mean of
        k values keeps (k-1)/k of its variance), and the degrees of freedom of that estimate
        ((k-1)(R-1) for k states over R rounds)."""
        k = len(self.states)
        if k < 2 or self.rounds < 2:
            return [], 0
        f = math.sqrt(k / (k - 1))
        return [[x * f for x in col] for col in self.centred], (k - 1) * (self.rounds - 1)


def pooled_noise(groups: Sequence[tuple[list[list[float]], int]]) -> tuple[float | None, int]:
    """One process's noise on the paired scale, pooled over every verdict's rounds (robustly: the
    pooled Shamos estimator of hourly.analysis.samples) and its degrees of freedom."""
    cols = [col for g, _ in groups for col in g if len(col) >= 2]
    if not cols:
        return None, 0
    sigma, _ = pooled_sigma(cols)
    return sigma, sum(d for _, d in groups)


def drift(before: Sequence[float], now: Sequence[float], sigma: float, log: bool) -> tuple[float, float]:
    """How much a state reads differently now (``now``, this verdict's rounds) than before
    (``before``, its values taken earlier): the change as a ratio less one (log scale) or in the
    metric's units, and how many standard errors it is. Drift of the machine, when every state of
    the rounds moved alike; paired verdicts cancel it, unpaired ones would read it as a step."""
    if not before or not now:
        return 0.0, 0.0
    if log and (min(before) <= 0 or min(now) <= 0):
        log = False
    f = np.log if log else (lambda x: np.asarray(x, float))
    a, b = location(f(np.asarray(before, float))), location(f(np.asarray(now, float)))
    se = sigma * math.hypot(location_se(len(before)), location_se(len(now)))
    d = b - a
    return (math.expm1(d) if log else d), (abs(d) / se if se > 0 else float("inf"))


def round_order(states: Sequence, r: int) -> list:
    """The order the states of round ``r`` run in: as given in even rounds, reversed in odd ones
    (A B C, C B A, …), so a level that moves steadily through a round moves each state's mean alike."""
    return list(states) if r % 2 == 0 else list(reversed(states))
