"""Crash windows met by a metric search: jumped over, and their edges found by exit status.

A stretch of states whose benchmark crashes (a break and, later, its fix) says nothing about the
metric. Walking it one neighbour at a time costs a probe per state (16 of them on the real 2026
history, docs/real-history.md). So a metric search that meets a crashing probe jumps away from it,
as ``git bisect skip`` does (:func:`jump`: the middle of the larger side), and after two crashing
probes in a row finds the window's two edges by exit status — two binary searches between the
nearest states known to run and the crashes (:func:`first_crash`, :func:`last_crash`) — and goes on
with the metric search outside it. The states inside the window between its edges are not run:
they are taken to crash as its edges do (when the change lies inside, the answer says so).
:class:`Crashes` is that bookkeeping for one search (hourly.analysis.step_search.StepSearch).

Pure logic: the outcome of a state comes from a callback (True: it runs, False: it crashes, None:
it cannot say, e.g. its build failed), and a run of it from the search's.
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


class Crashes:
    """The crash windows one metric search meets (its ``crash_windows``): which probe comes after a
    crash, and when two crash in a row, the window between them with its edges.

    It decides three things: the probe after a crashing one (:meth:`away`: well away from it,
    :func:`jump`); after the second crash in a row, which states form the window (:meth:`after_probe`:
    one window, or two when a state between the two crashes runs); and each window's edges
    (:meth:`window`: :func:`first_crash`, :func:`last_crash`, by exit status), its states then left
    out of the metric search as untestable.

    ``failed``: the search's own untestable states, with the reason (read, and a window's states
    added); ``sampled(state)``: whether the search has samples of it in hand (or measured ahead);
    ``run_once(state)``: one run of it through the search, for its exit status; ``on_edge(state,
    runs)`` hears each such run.
    """

    def __init__(self, failed: dict[int, str], sampled: Callable[[int], bool], run_once: Callable[[int], None],
                 on_edge: Callable[[int, bool], None] | None = None):
        self.failed, self.sampled, self.run_once = failed, sampled, run_once
        self.crashed: set[int] = set()  # states whose benchmark ran and failed (crash, time-out, no metric)
        self.windows: list[CrashWindow] = []
        self.last_crash: int | None = None  # the probe before, when it crashed (and no window was found after it)
        self.on_edge = on_edge or (lambda i, runs: None)
        self.edge_probes = 0  # exit-status probes of crash windows' edges

    def runs(self, i: int) -> bool:
        """Whether state ``i``'s benchmark is known to run: it is not untestable and has samples."""
        return i not in self.failed and self.sampled(i)

    def away(self, a: int, b: int, j: int, candidates: Iterable[int]) -> int:
        """The next probe's offset in ``a``..``b``: ``j`` (the search's own choice), unless the probe
        before crashed inside ``a``..``b`` — then, as ``git bisect skip``, not its neighbour but the
        state well away from it among ``candidates`` (:func:`jump`)."""
        c = self.last_crash
        if c is None or not a < c < b:
            return j
        k = jump(a, b, c, candidates)
        assert k is not None  # the candidates hold the search's own choice, never the crash (untestable)
        return k - a

    def outcome(self, m: int) -> bool | None:
        """Whether state ``m``'s benchmark runs (True), crashes (False) or cannot say (None): known,
        else one run of it, for its exit status."""
        if m in self.crashed:
            return False
        if m in self.failed:
            return None
        if self.runs(m):
            return True
        self.edge_probes += 1
        self.run_once(m)
        runs = self.runs(m)
        self.on_edge(m, runs)
        return True if runs else (False if m in self.crashed else None)

    def after_probe(self, i: int, a: int, b: int) -> None:
        """A probe ``i`` in ``a``..``b`` that crashed: the next one jumps away from it; the second
        crash in a row, the window's edges are found by exit status and its states left out of the
        metric search. A probe that did not crash ends the row."""
        if i not in self.crashed:
            self.last_crash = None
            return
        if self.last_crash is None or self.last_crash == i:
            self.last_crash = i
            return
        c1, self.last_crash = self.last_crash, None
        lo, hi = sorted((c1, i))
        between = [s for s in range(lo + 1, hi) if self.runs(s)]
        if not between and hi - lo > 1:
            cands = [s for s in range(lo + 1, hi) if s not in self.failed]
            if cands:
                mid = (lo + hi) / 2
                m = min(cands, key=lambda s: (abs(s - mid), s))
                if self.outcome(m):
                    between = [m]
        if between:  # a state between the two runs: two windows, each with its own edges
            self.window(lo, lo, a, between[0])
            self.window(hi, hi, between[-1], b)
        else:
            self.window(lo, hi, a, b)

    def window(self, x: int, y: int, a: int, b: int) -> None:
        """The crash window holding crashes ``x``..``y``, its edges searched between the nearest
        states known to run inside ``a``..``b``; its states are left out of the metric search."""
        if any(w.holds(x) or w.holds(y) for w in self.windows):
            return
        left = max([a] + [s for s in range(a + 1, x) if self.runs(s)])
        right = min([b] + [s for s in range(y + 1, b) if self.runs(s)])
        x = min([x] + [s for s in range(left + 1, x) if s in self.crashed])
        y = max([y] + [s for s in range(y + 1, right) if s in self.crashed])
        n0 = self.edge_probes
        first, before, _ = first_crash(left, x, self.outcome)
        last, after, _ = last_crash(y, right, self.outcome)
        w = CrashWindow(first, last, before, after, self.edge_probes - n0)
        self.windows.append(w)
        for st in range(first, last + 1):
            self.failed.setdefault(st, f"inside the crash window of states {first}..{last} (not run: its edges "
                                       "were found by exit status)")
