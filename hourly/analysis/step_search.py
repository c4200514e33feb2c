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

Two parts decide the rest, each in its own class: with a ``rounds`` callback, every verdict comes
from rounds of the states it compares (:class:`~hourly.analysis.paired_verdicts.PairedVerdicts`);
with ``crash_windows``, a crashing probe is jumped over and two in a row find a crash window by exit
status (:class:`~hourly.analysis.crash_window.Crashes`). This module keeps the intervals, the probe
choice, the verdicts on samples and the steps.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from hourly.analysis.bisection import DEFAULT_MIN_CHANGE, Pending, Step, Verdict, next_probe
from hourly.analysis.crash_window import Crashes
from hourly.analysis.judges.metric import Judgement, Level, MetricJudge
from hourly.analysis.paired import Paired
from hourly.analysis.paired_verdicts import PairedVerdicts, RoundsFn
from hourly.analysis.process_stat import Choice
from hourly.analysis.rounds import MeasureFn, MeasureManyFn, RoundPlanner
from hourly.analysis.samples import location
from hourly.analysis.search_state import SearchState

__all__ = ["Pending", "Step", "StepSearch"]


class StepSearch:
    """Every step of at least ``min_change`` between states 0 and n-1 (whose levels differ),
    earliest first, driven by ``measure``; pure logic, no I/O of its own.

    ``known`` gives samples already in hand per state (a scan's, an earlier search's);
    ``failed`` states already known untestable (with the reason); ``cost(i)`` a state's cost in
    builds (default: 0 once sampled, else 1). ``on_verdict(i, judgement)`` hears every verdict;
    ``judge`` decides them (the metric judge: hourly.analysis.judges.metric).
    With ``stop_at_regression`` the search stops at the first regression it pins and says in
    ``more_after`` whether intervals after it still hold a step. Its parts: ``paired_verdicts``
    (``rounds``, ``given``, ``checked``, ``on_note``) and ``crashes`` (``crash_windows``, ``on_edge``).
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
        self.measure = measure
        #: what the search knows (samples, verdicts, open intervals, settings): what its planner and
        #: its paired verdicts read, handed to them as an argument
        self.state = SearchState(n, repeats=repeats, max_repeats=max_repeats, min_change=min_change,
                                 higher_is_better=higher_is_better, judge=judge or MetricJudge(), cost=cost,
                                 known=known, failed=failed)
        st = self.state
        # the state's own objects, read here by their names as before (never rebound)
        self.n, self.judge, self.repeats, self.max_repeats = st.n, st.judge, st.repeats, st.max_repeats
        self.min_change, self.higher_is_better = st.min_change, st.higher_is_better
        self.samples, self.failed, self.unsure, self.verdicts = st.samples, st.failed, st.unsure, st.verdicts
        self.ref, self.noise, self.delta, self.cost, self.mean = st.ref, st.noise, st.delta, st.cost, st.mean
        self.on_verdict = on_verdict or (lambda i, j: None)
        self.stop_at_regression = stop_at_regression
        self.steps: list[Step] = []
        self.more_after = False
        self.dropped: list[tuple[int, int]] = []  # intervals whose ends turned out not to differ
        self.planner = RoundPlanner(st)  # its rounds of W states (run_rounds)
        # -- paired verdicts (``rounds``): every verdict from rounds of the states it compares
        self.paired = rounds is not None
        self.paired_verdicts = PairedVerdicts(st, rounds, given, checked, on_note)
        # -- crash windows (``crash_windows``): a crashing probe is jumped over; two in a row, its edges
        self.crash_windows = crash_windows
        self.crashes = Crashes(self.failed, lambda i: bool(st.samples.get(i) or st.ready.get(i)),
                               self._run_once, on_edge)
        # what drivers read here, as before the two parts: the parts' own objects (never rebound)
        self.checked, self.outcomes = self.paired_verdicts.checked, self.paired_verdicts.outcomes
        self.groups, self.drifts = self.paired_verdicts.groups, self.paired_verdicts.drifts
        self.crashed, self.windows = self.crashes.crashed, self.crashes.windows

    @property
    def rounds(self) -> int:
        """Rounds of measure_many so far (:meth:`run_rounds`)."""
        return self.state.rounds

    # -- samples and noise ------------------------------------------------------------------
    def get(self, i: int, want: int) -> list[float] | None:
        """State ``i``'s samples, measuring more until there are ``want`` (None: untestable)."""
        if i in self.failed:
            return None
        s = self.samples.setdefault(i, [])
        if len(s) < want and self.state.ready.get(i):  # measured ahead in a round: every one of them first
            s.extend(self.state.ready.pop(i))
        if len(s) < want:
            new = self.measure(i, want - len(s))
            if new is None:
                self.failed.setdefault(i, "untestable")
                return None
            s.extend(new)
        return s

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
            return self.paired_verdicts.apart(a, b)
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
        if i in self.paired_verdicts.given and i not in self.failed:
            j = self.paired_verdicts.given.pop(i)
        elif i in self.failed:
            j = self.judge.untestable_level(self.failed[i])
        elif self.paired:
            j = self.paired_verdicts.decide(i, a, b)
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
        stack = self.state.stack
        while stack:
            a, b, check = stack[-1]  # popped once dealt with: a round driver re-enters after Pending
            if check and not self.apart(a, b):
                stack.pop()
                self.dropped.append((a, b))
                continue
            skip = {i - a: Verdict.SKIP for i in range(a + 1, b) if i in self.failed or i in self.unsure}
            costs = {i - a: self.cost(i) for i in range(a + 1, b) if i - a not in skip}
            j = next_probe(b - a + 1, skip, costs)
            if j is not None and self.crash_windows:  # the probe before crashed: well away from it
                j = self.crashes.away(a, b, j, [a + k for k in costs])
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
                self.crashes.after_probe(i, a, b)
            stack.pop()
            if v is Level.SKIP:
                stack.append((a, b, i in self.unsure and i not in self.failed))
            elif v is Level.LOW:
                self.state.join(i, a)
                stack.append((i, b, False))
            elif v is Level.HIGH:
                self.state.join(i, b)
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
        return self.planner.run(measure_many, workers, self._run_with)

    def _run_with(self, measure: MeasureFn) -> list[Step]:
        """:meth:`run` with ``measure`` in place of the search's own (the round planner's: it answers
        from the samples measured in rounds)."""
        own, self.measure = self.measure, measure
        try:
            return self.run()
        finally:
            self.measure = own

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

    def _run_once(self, m: int) -> None:
        """One run of state ``m`` (a crash window's edge, for its exit status): a round of it alone
        when paired, else one sample."""
        if self.paired:
            self.paired_verdicts.rounds([m], 1, stop_on=m)
        else:
            self.get(m, 1)

    # -- what a driver hands the search -------------------------------------------------------
    def seed(self, a: int, b: int, p: Paired, held: Choice | None = None) -> None:
        """Rounds of ``a`` and ``b`` measured before the search (:meth:`PairedVerdicts.seed`)."""
        self.paired_verdicts.seed(a, b, p, held)

    def give(self, i: int, samples: Sequence[float]) -> None:
        """Samples of state ``i`` measured ahead (in a round with others): the search takes them first."""
        self.state.ready.setdefault(i, []).extend(samples)

    def mark_untestable(self, i: int, why: str, crashed: bool = False) -> None:
        """State ``i`` cannot be measured (its build failed, it printed no metric): never probed.
        ``crashed``: its benchmark ran and failed (a crash, a time-out, no metric), the kind of
        state a crash window holds."""
        self.failed[i] = why
        if crashed:
            self.crashed.add(i)

    def measured_ahead(self, i: int) -> list[float]:
        """Samples of state ``i`` measured ahead and not asked for yet."""
        return list(self.state.ready.get(i, ()))

    def confirm(self, step: Step, fresh: Callable[[int, int], "list[float] | None"]) -> tuple[Judgement, Judgement]:
        """Fresh samples of the step's two states (``fresh(state, count)``), each judged between
        their stored samples: LOW then HIGH confirms the step."""
        out = []
        for i in (step.lo, step.hi):
            got: list[float] = []

            def sample(want: int, i: int = i, got: list[float] = got) -> list[float] | None:
                if len(got) < want:
                    new = fresh(i, want - len(got))
                    if new is None:
                        return None
                    got.extend(new)
                return got
            out.append(self.sequential(sample, step.lo, step.hi))
        return out[0], out[1]
