"""What a window search knows, apart from how it goes on: the state that its round planner and its
paired verdicts read (hourly.analysis.rounds, hourly.analysis.paired_verdicts) and that the search
itself (hourly.analysis.step_search.StepSearch) changes.

A leaf of the window search: it imports none of the three, so each of them takes a
:class:`SearchState` as an argument instead of the search that holds it.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from hourly.analysis.bisection import COST_BUILD, COST_MEASURED
from hourly.analysis.detect import NOISE_FLOOR_RELATIVE, PRIOR_RELATIVE_NOISE
from hourly.analysis.judges.metric import INDIFFERENCE, Judgement, MetricJudge, resolvable_change
from hourly.analysis.samples import location, pooled_sigma

__all__ = ["SearchState"]


class SearchState:
    """The ``n`` states of a window search: its settings (``repeats``, ``max_repeats``,
    ``min_change``, ``higher_is_better``), its ``judge``, each state's samples (``samples``; measured
    ahead in a round and not asked for yet: ``ready``), the states that cannot be measured
    (``failed``) or that were judged unsure (``unsure``), the verdicts (``verdicts``), the open
    intervals (``stack``: ``(a, b, check)``, the earliest on top; ``check``: one test said its ends
    differ, so a second, on the ends themselves, must agree) and the rounds measured (``rounds``).
    States judged at one level share a root: their samples pool (:meth:`ref`)."""

    def __init__(self, n: int, *, repeats: int, max_repeats: int, min_change: float, higher_is_better: bool,
                 judge: MetricJudge, cost: Callable[[int], float] | None = None,
                 known: Mapping[int, Sequence[float]] | None = None, failed: dict[int, str] | None = None):
        self.n = n
        self.judge = judge  # where a probe stands, and whether two states differ
        self.repeats, self.max_repeats = max(1, repeats), max(1, max_repeats, repeats)
        self.min_change, self.higher_is_better = min_change, higher_is_better
        self.samples: dict[int, list[float]] = {i: list(v) for i, v in (known or {}).items() if v}
        self.failed: dict[int, str] = dict(failed or {})
        self.unsure: set[int] = set()
        self.verdicts: dict[int, Judgement] = {}
        self.stack: list[tuple[int, int, bool]] = [(0, n - 1, False)]
        self.ready: dict[int, list[float]] = {}  # rounds: samples measured, not yet asked for
        self.rounds = 0  # rounds of measure_many so far (run_rounds)
        self._cost = cost
        self._root = list(range(n))

    def find(self, i: int) -> int:
        while self._root[i] != i:
            self._root[i] = self._root[self._root[i]]
            i = self._root[i]
        return i

    def join(self, i: int, j: int) -> None:
        self._root[self.find(i)] = self.find(j)

    def ref(self, i: int) -> list[float]:
        """Every sample of the states judged at state ``i``'s level: the reference for that level,
        more precise with every probe that lands on it."""
        r = self.find(i)
        return [x for j in range(self.n) if self.find(j) == r for x in self.samples.get(j, ())]

    def noise(self) -> tuple[float, int]:
        """One sample's standard deviation, pooled over every state sampled more than once."""
        groups = [g for g in self.samples.values() if g]
        level = float(np.median([abs(location(g)) for g in groups])) if groups else 1.0
        s, dof = pooled_sigma(groups)
        floor = max(NOISE_FLOOR_RELATIVE * level, 1e-12)
        return max(s if s is not None else PRIOR_RELATIVE_NOISE * level, floor), dof

    def delta(self, sigma: float) -> float:
        """The smallest step searched for: --min-change of the level (or the whole window's change,
        when that is smaller: the window was asked for), or what the repeats can resolve."""
        level = abs(location(self.samples[0])) if self.samples.get(0) else 1.0
        want = self.min_change * level
        if self.samples.get(self.n - 1) and self.samples.get(0):
            want = min(want, abs(location(self.samples[self.n - 1]) - location(self.samples[0])))
        return max(INDIFFERENCE * want, resolvable_change(sigma, self.max_repeats))

    def cost(self, i: int) -> float:
        if self.ready.get(i):
            return COST_MEASURED
        if self._cost is not None:
            return self._cost(i)
        return COST_MEASURED if self.samples.get(i) else COST_BUILD

    def mean(self, i: int) -> float:
        return location(self.samples[i])
