"""Crash windows met by a metric search: jumped over, and their edges found by exit status.

A stretch of states whose benchmark crashes (a break and, later, its fix) says nothing about the
metric. Walking it one neighbour at a time costs a probe per state (16 of them on the real 2026
history, docs/real-history.md). So a metric search that meets a crashing probe jumps away from it,
as ``git bisect skip`` does (:func:`jump`: the middle of the larger side), and after two crashing
probes in a row finds the window's two edges by exit status — two binary searches between the
nearest states known to run and the crashes (:func:`first_crash`, :func:`last_crash`) — and goes on
with the metric search outside it. The states inside the window between its edges are not run:
they are taken to crash as its edges do (when the change lies inside, the answer says so).

Pure logic: the outcome of a state comes from a callback (True: it runs, False: it crashes, None:
it cannot say, e.g. its build failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

#: outcome(state) -> True (the benchmark runs), False (it crashes), None (untestable otherwise)
Outcome = Callable[[int], "bool | None"]


@dataclass
class CrashWindow:
    """States ``first``..``last`` crash (the states between them taken to, not run); ``before`` and
    ``after``: the nearest states known to run on each side (None: the search's interval ended
    first); ``exact_end``: ``after`` is ``last + 1``, so the step from ``last`` to ``after`` is what
    ends the window (its fix); ``probes``: the exit-status probes its edges took."""

    first: int
    last: int
    before: int | None = None
    after: int | None = None
    probes: int = 0

    @property
    def exact_end(self) -> bool:
        return self.after is not None and self.after == self.last + 1

    @property
    def states(self) -> int:
        return self.last - self.first + 1

    def holds(self, i: int) -> bool:
        return self.first <= i <= self.last


def jump(a: int, b: int, crashed: int, candidates: Iterable[int]) -> int | None:
    """The probe after a crash at ``crashed`` inside ``a``..``b``: not a neighbour, but the middle
    of the larger side (the state nearest it among ``candidates``), as ``git bisect skip`` moves
    well away from a commit it cannot test. None when no candidate is left."""
    cands = sorted(c for c in candidates if a < c < b and c != crashed)
    if not cands:
        return None
    left, right = crashed - a, b - crashed
    lo, hi = (a, crashed) if left >= right else (crashed, b)
    side = [c for c in cands if lo < c < hi] or cands
    mid = (lo + hi) / 2
    return min(side, key=lambda c: (abs(c - mid), c))


def _middle(lo: int, hi: int, dead: set[int]) -> int | None:
    cands = [m for m in range(lo + 1, hi) if m not in dead]
    if not cands:
        return None
    mid = (lo + hi) / 2
    return min(cands, key=lambda m: (abs(m - mid), m))


def first_crash(runs: int, crashes: int, outcome: Outcome) -> tuple[int, int, int]:
    """The first crashing state after ``runs`` (a state that runs) up to ``crashes`` (one that
    crashes), by exit status: a binary search. Returns (the first crash, the last state known to run
    before it, probes asked)."""
    ran, crashed, asked = _edge(runs, crashes, outcome, lo_runs=True)
    return crashed, ran, asked


def last_crash(crashes: int, runs: int, outcome: Outcome) -> tuple[int, int, int]:
    """The last crashing state from ``crashes`` on before ``runs`` (a state that runs), by exit
    status: a binary search. Returns (the last crash, the first state known to run after it, probes
    asked)."""
    return _edge(crashes, runs, outcome, lo_runs=False)


def _edge(lo: int, hi: int, outcome: Outcome, lo_runs: bool) -> tuple[int, int, int]:
    """The edge between ``lo`` and ``hi``, one a state that runs and the other one that crashes
    (``lo_runs``: which), by binary search on exit status, states that cannot be built stepped
    round: (the state before the edge, the one after it, probes asked)."""
    asked = 0
    dead: set[int] = set()
    while True:
        m = _middle(lo, hi, dead)
        if m is None:
            return lo, hi, asked
        asked += 1
        o = outcome(m)
        if o is None:
            dead.add(m)
        elif bool(o) == lo_runs:
            lo = m
        else:
            hi = m
