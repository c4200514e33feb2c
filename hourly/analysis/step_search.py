"""Every step of a window under noise: the window search of metric mode (docs/bisect.md).

The plain search (hourly.analysis.bisection.next_probe) needs a verdict per state, good or bad,
against two fixed ends: one step. A window may hold several (two regressions, a regression and an
improvement that hides part of it), and a state between two steps fits neither end.
:class:`StepSearch` finds them all: it keeps intervals whose ends are known to differ, probes inside
one (``next_probe``'s cost-aware choice), and asks the metric judge whether the probe sits at the
level of the interval's earlier end, of its later end, or at least ``min_change`` away from both —
then the interval is split on that side, or on both. The same test answers "does the rest of the
window hold another step of at least min_change": every interval is only ever narrowed by it,
never by a comparison of a few fixed samples.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import numpy as np

from hourly.analysis.bisection import (
    COST_BUILD,
    COST_MEASURED,
    DEFAULT_MIN_CHANGE,
    Pending,
    Step,
    Verdict,
    next_probe,
)
from hourly.analysis.crash_window import CrashWindow, first_crash, jump, last_crash
from hourly.analysis.detect import NOISE_FLOOR_RELATIVE, PRIOR_RELATIVE_NOISE
from hourly.analysis.judges.metric import INDIFFERENCE, Judgement, Level, MetricJudge, resolvable_change
from hourly.analysis.judges.paired import DRIFT_MIN, DRIFT_Z, END_ROUNDS, MIN_ROUNDS, PairedMetricJudge, more_rounds
from hourly.analysis.paired import Block, Paired, drift, log_scale
from hourly.analysis.rounds import MeasureFn, MeasureManyFn, RoundPlanner
from hourly.analysis.samples import location, pooled_sigma

#: rounds(states, count, stop_on) -> ``count`` rounds of ``states`` measured in alternation, one
#: process each (a round's order alternates, hourly.analysis.paired.round_order): per round, each
#: state's value (None: its run failed). ``stop_on``: a state whose failure ends the rounds early.
RoundsFn = Callable[[list[int], int, "int | None"], Sequence[Block]]

__all__ = ["Pending", "Step", "StepSearch"]


class StepSearch:
    """Every step of at least ``min_change`` between states 0 and n-1 (whose levels differ),
    earliest first, driven by ``measure``; pure logic, no I/O of its own.

    ``known`` gives samples already in hand per state (a scan's, an earlier search's);
    ``failed`` states already known untestable (with the reason); ``cost(i)`` a state's cost in
    builds (default: 0 once sampled, else 1). ``on_verdict(i, judgement)`` hears every verdict;
    ``judge`` decides them (the metric judge: hourly.analysis.judges.metric).
    With ``stop_at_regression`` the search stops at the first regression it pins and says in
    ``more_after`` whether intervals after it still hold a step.
    """

    def __init__(self, n: int, measure: MeasureFn, *, repeats: int = 1, max_repeats: int = 20,
                 min_change: float = DEFAULT_MIN_CHANGE, higher_is_better: bool = True,
                 cost: Callable[[int], float] | None = None, known: Mapping[int, Sequence[float]] | None = None,
                 failed: dict[int, str] | None = None,
                 on_verdict: Callable[[int, Judgement], None] | None = None, stop_at_regression: bool = False,
                 judge: MetricJudge | None = None, rounds: RoundsFn | None = None, crash_windows: bool = False,
                 given: Mapping[int, Judgement] | None = None, checked: Mapping[tuple[int, int], bool] | None = None,
                 on_edge: Callable[[int, bool], None] | None = None, on_note: Callable[[str], None] | None = None):
        if n < 2:
            raise ValueError("a window needs two states")
        self.n, self.measure = n, measure
        self.judge = judge or MetricJudge()  # where a probe stands, and whether two states differ
        self.repeats, self.max_repeats = max(1, repeats), max(1, max_repeats, repeats)
        self.min_change, self.higher_is_better = min_change, higher_is_better
        self.samples: dict[int, list[float]] = {i: list(v) for i, v in (known or {}).items() if v}
        self.failed: dict[int, str] = dict(failed or {})
        self.unsure: set[int] = set()
        self.verdicts: dict[int, Judgement] = {}
        self._cost = cost
        self.on_verdict = on_verdict or (lambda i, j: None)
        self.stop_at_regression = stop_at_regression
        self.steps: list[Step] = []
        self.more_after = False
        self.dropped: list[tuple[int, int]] = []  # intervals whose ends turned out not to differ
        # intervals whose ends differ, the earliest on top; ``check``: one test said so (a probe
        # between two levels, or an unsure one), so a second, on the ends themselves, must agree
        self._stack: list[tuple[int, int, bool]] = [(0, n - 1, False)]
        self._root = list(range(n))  # states judged at one level share a root: their samples pool
        self._ready: dict[int, list[float]] = {}  # rounds: samples measured, not yet asked for
        self.rounds = 0  # rounds of measure_many so far (run_rounds)
        self.planner = RoundPlanner(self)  # its rounds of W states (run_rounds)
        # -- paired verdicts (``rounds``): every verdict from rounds of the states it compares
        self.rounds_fn = rounds
        self.paired = rounds is not None
        #: every verdict's centred rounds (their scale, the groups, their degrees of freedom): the noise
        self.groups: list[tuple[bool, list[list[float]], int]] = []
        #: paired comparisons of two states made (a step's two states, an interval's ends): whether
        #: they differ, and the rounds they rest on (None: given, from a stored verdict)
        self.checked: dict[tuple[int, int], tuple[bool, Paired | None]] = {
            k: (v, None) for k, v in (checked or {}).items()}
        #: verdicts stored by an earlier run of this search (resumed): taken, not measured again
        self.given: dict[int, Judgement] = dict(given or {})
        #: the three outcomes of each paired comparison (True: they differ, False: they do not, None:
        #: unknown after every round); its words
        self.outcomes: dict[tuple[int, int], tuple[bool | None, str]] = {
            k: (v, "confirmed before (stored)") for k, v in (checked or {}).items()}
        self.on_note = on_note or (lambda text: None)
        #: rounds measured before the search, per pair of states (seed); the window's ends' rounds
        self.seeds: dict[tuple[int, int], list[Block]] = {}
        self.window_paired: Paired | None = None
        self.drifts: list[str] = []
        # -- crash windows (``crash_windows``): a crashing probe is jumped over; two in a row, its edges
        self.crash_windows = crash_windows
        self.crashed: set[int] = set()  # states whose benchmark ran and failed (crash, time-out, no metric)
        self.windows: list[CrashWindow] = []
        self._last_crash: int | None = None
        self.on_edge = on_edge or (lambda i, runs: None)
        self.edge_probes = 0  # exit-status probes of crash windows' edges

    def _find(self, i: int) -> int:
        while self._root[i] != i:
            self._root[i] = self._root[self._root[i]]
            i = self._root[i]
        return i

    def _join(self, i: int, j: int) -> None:
        self._root[self._find(i)] = self._find(j)

    def ref(self, i: int) -> list[float]:
        """Every sample of the states judged at state ``i``'s level: the reference for that level,
        more precise with every probe that lands on it."""
        r = self._find(i)
        return [x for j in range(self.n) if self._find(j) == r for x in self.samples.get(j, ())]

    # -- samples and noise ------------------------------------------------------------------
    def get(self, i: int, want: int) -> list[float] | None:
        """State ``i``'s samples, measuring more until there are ``want`` (None: untestable)."""
        if i in self.failed:
            return None
        s = self.samples.setdefault(i, [])
        if len(s) < want and self._ready.get(i):  # measured ahead in a round: every one of them first
            s.extend(self._ready.pop(i))
        if len(s) < want:
            new = self.measure(i, want - len(s))
            if new is None:
                self.failed.setdefault(i, "untestable")
                return None
            s.extend(new)
        return s

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
        if self._ready.get(i):
            return COST_MEASURED
        if self._cost is not None:
            return self._cost(i)
        return COST_MEASURED if self.samples.get(i) else COST_BUILD

    def mean(self, i: int) -> float:
        return location(self.samples[i])

    # -- one verdict --------------------------------------------------------------------------
    def sequential(self, sample: Callable[[int], "list[float] | None"], a: int, b: int) -> Judgement:
        """Judge samples from ``sample(want)`` between states ``a`` and ``b``: more samples (doubling,
        the ends as many as the probe) while unsure, up to ``max_repeats``."""
        p = sample(self.repeats)
        while True:
            if p is None:
                return self.judge.untestable_level("untestable")
            want = min(len(p), self.max_repeats)
            self.get(a, want), self.get(b, want)
            low, high = self.ref(a), self.ref(b)
            sigma, dof = self.noise()
            final = len(p) >= self.max_repeats
            j = self.judge.level(p, low, high, sigma, dof, self.delta(sigma), final)
            if j.level is not Level.UNSURE:
                return j
            want = min(2 * len(p), self.max_repeats)
            try:
                p = sample(want)
            except Pending as e:  # the ends follow the probe to as many samples: same round
                e.ends.update({a: want, b: want})
                raise

    def apart(self, a: int, b: int, own: bool = False) -> bool:
        """Whether states ``a`` and ``b`` (their levels' pooled samples, or with ``own`` their own)
        differ by at least the smallest step searched for: a sequential test, both states sampled
        more (as often as each other, up to --max-repeats) while it is unsure; then the likelier."""
        if self.paired:
            return self._apart_paired(a, b)
        want = max(len(self.samples.get(a, ())), len(self.samples.get(b, ())), 1)
        while True:
            try:
                x, y = self.get(a, want), self.get(b, want)
            except Pending as e:
                e.ends.update({a: want, b: want})
                raise
            if x is None or y is None:
                return True
            if not own:
                x, y = self.ref(a), self.ref(b)
            sigma, dof = self.noise()
            final = want >= self.max_repeats
            d = self.judge.differ(x, y, sigma, dof, self.delta(sigma), final)
            if d is not None or final:
                return d is not False
            want = min(2 * want, self.max_repeats)

    def decide(self, i: int, a: int, b: int) -> Judgement:
        if i in self.given and i not in self.failed:
            j = self.given.pop(i)
        elif i in self.failed:
            j = self.judge.untestable_level(self.failed[i])
        elif self.paired:
            j = self._decide_paired(i, a, b)
            if j.level is Level.SKIP and i in self.failed:
                j = self.judge.untestable_level(self.failed[i])
        else:
            try:
                j = self.sequential(lambda want: self.get(i, want), a, b)
            except Pending as e:
                if e.probe is None:
                    e.probe, e.interval = i, (a, b)
                raise
            if j.level is Level.SKIP and i in self.failed:
                j = self.judge.untestable_level(self.failed[i])
        if j.level is Level.SKIP:
            self.unsure.add(i)
        self.verdicts[i] = j
        self.on_verdict(i, j)
        return j

    # -- the search ---------------------------------------------------------------------------
    def run(self) -> list[Step]:
        """Pin every step (or, with ``stop_at_regression``, up to the next regression: call again
        to go on to the one after it). Returns every step pinned so far."""
        stack = self._stack
        while stack:
            a, b, check = stack[-1]  # popped once dealt with: a round driver re-enters after Pending
            if check and not self.apart(a, b):
                stack.pop()
                self.dropped.append((a, b))
                continue
            skip = {i - a: Verdict.SKIP for i in range(a + 1, b) if i in self.failed or i in self.unsure}
            costs = {i - a: self.cost(i) for i in range(a + 1, b) if i - a not in skip}
            j = next_probe(b - a + 1, skip, costs)
            if j is not None and self.crash_windows and self._last_crash is not None and a < self._last_crash < b:
                # the probe before crashed: not its neighbour, but well away from it (git bisect skip)
                j = jump(a, b, self._last_crash, [a + k for k in costs]) - a  # type: ignore[operator]
            if j is None:
                if (b - a == 1 or self.paired) and not self.apart(a, b, own=True):
                    stack.pop()
                    self.dropped.append((a, b))  # the two states themselves do not differ
                    continue
                stack.pop()
                step = self._step(a, b)
                self.steps.append(step)
                if self.stop_at_regression and step.regression(self.higher_is_better):
                    self.more_after = bool(stack)
                    return self.steps
                continue
            i = a + j
            v = self.decide(i, a, b).level
            if self.crash_windows:
                self._after_probe(i, a, b)
            stack.pop()
            if v is Level.SKIP:
                stack.append((a, b, i in self.unsure and i not in self.failed))
            elif v is Level.LOW:
                self._join(i, a)
                stack.append((i, b, False))
            elif v is Level.HIGH:
                self._join(i, b)
                stack.append((a, i, False))
            else:
                stack += [(i, b, True), (a, i, True)]
        self.more_after = False
        return self.steps

    # -- the search, W states a round -------------------------------------------------------
    def run_rounds(self, measure_many: MeasureManyFn, workers: int) -> tuple[list[Step], int]:
        """:meth:`run` with up to ``workers`` states measured together per round, through one call
        ``measure_many({state: count})``; returns the steps pinned so far and the rounds this call
        took (:class:`~hourly.analysis.rounds.RoundPlanner`). ``workers=1`` makes exactly
        :meth:`run`'s probes, one per round."""
        return self.planner.run(measure_many, workers)

    # -- paired verdicts (hourly.analysis.judges.paired) --------------------------------------------
    def _pj(self) -> PairedMetricJudge:
        return self.judge if isinstance(self.judge, PairedMetricJudge) else PairedMetricJudge()

    def _log(self) -> bool:
        """Whether the search compares ratios (every value it has seen positive), else differences."""
        vals = [x for v in self.samples.values() for x in v]
        return log_scale(vals) if vals else True

    def _rounds(self, states: list[int], count: int, stop_on: int | None = None) -> Sequence[Block]:
        """``count`` rounds of ``states`` in alternation (the driver's), their values kept as context."""
        assert self.rounds_fn is not None
        if count <= 0:
            return []
        blocks = list(self.rounds_fn(states, count, stop_on))
        for bl in blocks:
            for st, v in bl.items():
                if v is not None:
                    self.samples.setdefault(st, []).append(v)
        return blocks

    def _noise_paired(self, p: Paired | None, log: bool) -> tuple[float, int]:
        groups = [(g, dof) for lg, g, dof in self.groups if lg == log]
        if p is not None:
            groups.append(p.noise_groups())
        s0 = self.samples.get(0)
        return self._pj().noise([g for g in groups if g[0]], log, location(s0) if s0 else 1.0)

    def _delta_paired(self, sigma: float, log: bool) -> float:
        """The smallest step searched for on the paired scale: --min-change (a ratio on a log scale),
        or the window's own change when smaller (its ends compared in rounds, else as measured)."""
        s0, s1 = self.samples.get(0), self.samples.get(self.n - 1)
        ends = self.window_paired
        if log:
            want = math.log1p(self.min_change)
            if ends is not None and ends.log:
                want = min(want, abs(math.log1p(ends.difference(0, self.n - 1))))
            elif s0 and s1 and min(s0) > 0 and min(s1) > 0:
                want = min(want, abs(math.log(location(s1) / location(s0))))
        else:
            want = self.min_change * (abs(location(s0)) if s0 else 1.0)
            if ends is not None and not ends.log:
                want = min(want, abs(ends.difference(0, self.n - 1)))
            elif s0 and s1:
                want = min(want, abs(location(s1) - location(s0)))
        return max(INDIFFERENCE * want, resolvable_change(sigma, self.max_repeats))

    def keep(self, p: Paired) -> None:
        """Rounds whose noise joins the window's (the ends', compared before the search)."""
        g, dof = p.noise_groups()
        if g:
            self.groups.append((p.log, g, dof))

    def _drift(self, before: dict[int, list[float]], p: Paired, sigma: float) -> None:
        """The states of a verdict that were measured before read alike differently now: the
        machine drifted (said; the paired verdict cancelled it)."""
        moved = []
        for st in p.states:
            if before.get(st):
                now = self.samples.get(st, [])[len(before[st]):]
                change, z = drift(before[st], now, sigma, p.log)
                moved.append((change, z))
        if not moved:
            return
        signs = {c > 0 for c, _ in moved}
        change = float(np.median([c for c, _ in moved]))
        level = 1.0 if p.log else abs(location(self.samples.get(0) or [1.0])) or 1.0
        if len(signs) == 1 and min(z for _, z in moved) >= DRIFT_Z and abs(change) / level >= DRIFT_MIN:
            text = self._pj().drift_words(change, p.log, f"since {'these states were' if len(moved) > 1 else 'this state was'}"
                                          " measured before")
            self.drifts.append(text)
            self.on_note(text)

    def _decide_paired(self, i: int, a: int, b: int) -> Judgement:
        """Probe ``i`` between ``a`` and ``b`` from rounds of the three in alternation: more rounds
        while unsure (half as many again each time), up to ``max_repeats`` rounds."""
        pj = self._pj()
        before = {st: list(self.samples.get(st, ())) for st in (a, i, b)}
        blocks: list[Block] = []
        want = max(MIN_ROUNDS, self.repeats)
        while True:
            blocks += self._rounds([a, i, b], want - len(blocks), stop_on=i)
            if i in self.failed:
                return pj.untestable_level(self.failed[i])
            log = self._log()
            p = Paired.of(blocks, [a, i, b], log)
            final = len(blocks) >= self.max_repeats
            if p.rounds:
                sigma, dof = self._noise_paired(p, log)
                j = pj.level_paired(p, a, i, b, sigma, dof, self._delta_paired(sigma, log), final)
                if j.level is not Level.UNSURE:
                    self.keep(p)
                    self._drift(before, p, sigma)
                    return j
            elif final:
                return Judgement(Level.SKIP, f"the interval's ends did not both run in any of {len(blocks)} rounds")
            want = len(blocks) + max(1, more_rounds(len(blocks), self.max_repeats))

    def _apart_paired(self, a: int, b: int) -> bool:
        """Whether states ``a`` and ``b`` differ, from rounds of the two in alternation (three
        outcomes: more rounds while unknown, up to ``max_repeats``; then the likelier)."""
        if (a, b) in self.checked:
            return self.checked[(a, b)][0]
        pj = self._pj()
        before = {st: list(self.samples.get(st, ())) for st in (a, b)}
        blocks: list[Block] = list(self.seeds.pop((a, b), []))
        want = max(MIN_ROUNDS if (a, b) != (0, self.n - 1) else END_ROUNDS, self.repeats, len(blocks))
        while True:
            blocks += self._rounds([a, b], want - len(blocks))
            log = self._log()
            p = Paired.of(blocks, [a, b], log)
            final = len(blocks) >= self.max_repeats
            if p.rounds:
                sigma, dof = self._noise_paired(p, log)
                d, words = pj.differ_paired(p, a, b, sigma, dof, self._delta_paired(sigma, log), final)
                if d is not None or final:
                    self.keep(p)
                    self._drift(before, p, sigma)
                    self.checked[(a, b)] = (d is not False, p)
                    self.outcomes[(a, b)] = (d, words)
                    return d is not False
            elif final:
                self.checked[(a, b)] = (True, None)
                self.outcomes[(a, b)] = (None, f"no round of {len(blocks)} ran both states")
                return True
            want = len(blocks) + max(1, more_rounds(len(blocks), self.max_repeats))

    def _step(self, a: int, b: int) -> Step:
        """The step from ``a`` to ``b``: its levels (in paired mode, the later from the two states'
        paired difference: its direction is never read across the window's drift)."""
        x, y = self.ref(a), self.ref(b)
        before = location(x) if x else 0.0
        after = location(y) if y else before
        p = self.checked.get((a, b), (True, None))[1]
        if p is not None and p.rounds:
            diff = p.difference(a, b)
            after = before * (1 + diff) if p.log else before + diff
        return Step(a, b, before, after)

    def seed(self, a: int, b: int, p: Paired) -> None:
        """Rounds of ``a`` and ``b`` measured before the search (the window's ends, compared first):
        their noise joins the window's, they give the window's change, and a comparison of the two
        (the confirmation of a two-state window) goes on from them."""
        self.keep(p)
        self.window_paired = p
        self.seeds[(a, b)] = [{a: x, b: y} for x, y in zip(p.raw(a), p.raw(b), strict=True)]

    def paired_check(self, a: int, b: int) -> tuple[bool, Paired | None] | None:
        """The paired comparison of ``a`` and ``b`` the search made (None: none)."""
        return self.checked.get((a, b))

    # -- crash windows (hourly.analysis.crash_window) --------------------------------------------
    def _runs(self, i: int) -> bool:
        return i not in self.failed and bool(self.samples.get(i) or self._ready.get(i))

    def _outcome(self, m: int) -> bool | None:
        """Whether state ``m``'s benchmark runs (True), crashes (False) or cannot say (None): known,
        else one run of it, for its exit status."""
        if m in self.crashed:
            return False
        if m in self.failed:
            return None
        if self._runs(m):
            return True
        self.edge_probes += 1
        if self.paired:
            self._rounds([m], 1, stop_on=m)
        else:
            self.get(m, 1)
        runs = self._runs(m)
        self.on_edge(m, runs)
        return True if runs else (False if m in self.crashed else None)

    def _after_probe(self, i: int, a: int, b: int) -> None:
        """A probe that crashed: the next one jumps away from it; the second crash in a row, the
        window's edges are found by exit status and its states left out of the metric search."""
        if i not in self.crashed:
            self._last_crash = None
            return
        if self._last_crash is None or self._last_crash == i:
            self._last_crash = i
            return
        c1, self._last_crash = self._last_crash, None
        lo, hi = sorted((c1, i))
        between = [s for s in range(lo + 1, hi) if self._runs(s)]
        if not between and hi - lo > 1:
            cands = [s for s in range(lo + 1, hi) if s not in self.failed]
            if cands:
                mid = (lo + hi) / 2
                m = min(cands, key=lambda s: (abs(s - mid), s))
                if self._outcome(m):
                    between = [m]
        if between:  # a state between the two runs: two windows, each with its own edges
            self._window(lo, lo, a, between[0])
            self._window(hi, hi, between[-1], b)
        else:
            self._window(lo, hi, a, b)

    def _window(self, x: int, y: int, a: int, b: int) -> None:
        """The crash window holding crashes ``x``..``y``, its edges searched between the nearest
        states known to run inside ``a``..``b``; its states are left out of the metric search."""
        if any(w.holds(x) or w.holds(y) for w in self.windows):
            return
        left = max([a] + [s for s in range(a + 1, x) if self._runs(s)])
        right = min([b] + [s for s in range(y + 1, b) if self._runs(s)])
        x = min([x] + [s for s in range(left + 1, x) if s in self.crashed])
        y = max([y] + [s for s in range(y + 1, right) if s in self.crashed])
        n0 = self.edge_probes
        first, before, _ = first_crash(left, x, self._outcome)
        last, after, _ = last_crash(y, right, self._outcome)
        w = CrashWindow(first, last, before, after, self.edge_probes - n0)
        self.windows.append(w)
        for st in range(first, last + 1):
            self.failed.setdefault(st, f"inside the crash window of states {first}..{last} (not run: its edges "
                                       "were found by exit status)")

    # -- what a driver hands the search -------------------------------------------------------
    def give(self, i: int, samples: Sequence[float]) -> None:
        """Samples of state ``i`` measured ahead (in a round with others): the search takes them first."""
        self._ready.setdefault(i, []).extend(samples)

    def mark_untestable(self, i: int, why: str, crashed: bool = False) -> None:
        """State ``i`` cannot be measured (its build failed, it printed no metric): never probed.
        ``crashed``: its benchmark ran and failed (a crash, a time-out, no metric), the kind of
        state a crash window holds."""
        self.failed[i] = why
        if crashed:
            self.crashed.add(i)

    def measured_ahead(self, i: int) -> list[float]:
        """Samples of state ``i`` measured ahead and not asked for yet."""
        return list(self._ready.get(i, ()))

    def confirm(self, step: Step, fresh: Callable[[int, int], "list[float] | None"]) -> tuple[Judgement, Judgement]:
        """Fresh samples of the step's two states (``fresh(state, count)``), each judged between
        their stored samples: LOW then HIGH confirms the step."""
        out = []
        for i in (step.lo, step.hi):
            got: list[float] = []

            def sample(want: int, i=i, got=got) -> list[float] | None:
                if len(got) < want:
                    new = fresh(i, want - len(got))
                    if new is None:
                        return None
                    got.extend(new)
                return got
            out.append(self.sequential(sample, step.lo, step.hi))
        return out[0], out[1]
