"""The paired verdicts of one window search: every verdict from rounds of the states it compares.

A window search (:class:`~hourly.analysis.step_search.StepSearch`) given a ``rounds`` callback does
not judge a probe from samples measured whenever: it asks for *rounds* — the states a verdict
compares (a probe and its interval's two ends, or two states alone) measured one process each, in
alternation (hourly.analysis.paired) — so whatever the machine does to all of them in that stretch
cancels. :class:`PairedVerdicts` holds that part of the search and decides:

* where a probe stands between its interval's ends (:meth:`PairedVerdicts.decide`: rounds of the
  three, more while the judge is unsure);
* whether two states differ (:meth:`PairedVerdicts.apart`: rounds of the two, three outcomes, each
  comparison made once and kept in ``checked``/``outcomes``);
* the noise and the smallest step on the paired scale (:meth:`PairedVerdicts.noise`,
  :meth:`PairedVerdicts.delta`), and whether the machine drifted under a verdict (said through
  ``on_note``, kept in ``drifts``).

The judging itself is hourly.analysis.judges.paired's; the samples, the failed states and the
search's settings (repeats, --max-repeats, --min-change) are the search's own, read through it.
Pure logic: the rounds come from the driver's callback.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from hourly.analysis.judges import paired_judge
from hourly.analysis.judges.metric import INDIFFERENCE, Judgement, Level, resolvable_change
from hourly.analysis.judges.paired import DRIFT_MIN, DRIFT_Z, END_ROUNDS, MIN_ROUNDS, PairedMetricJudge, more_rounds
from hourly.analysis.paired import Block, Paired, drift, log_scale
from hourly.analysis.process_stat import DEFAULT_CHOICE, WORDS, Choice, ProcessValue, choose_statistic
from hourly.analysis.samples import location

if TYPE_CHECKING:
    from hourly.analysis.search_state import SearchState

#: rounds(states, count, stop_on) -> ``count`` rounds of ``states`` measured in alternation, one
#: process each (a round's order alternates, hourly.analysis.paired.round_order): per round, each
#: state's value (None: its run failed). ``stop_on``: a state whose failure ends the rounds early.
RoundsFn = Callable[[list[int], int, "int | None"], Sequence[Block]]

__all__ = ["PairedVerdicts", "RoundsFn"]


class PairedVerdicts:
    """The paired verdicts of ``search`` (see the module's text), from rounds through ``rounds_fn``
    (None: the search is not paired; what it was handed is still kept here). ``given`` and
    ``checked``: the verdicts and the comparisons of two states stored by an earlier run of the
    search (resumed: its rounds are gone); ``on_note`` hears each drift said."""

    def __init__(self, search: "SearchState", rounds_fn: RoundsFn | None, given: Mapping[int, Judgement] | None = None,
                 checked: Mapping[tuple[int, int], bool] | None = None, on_note: Callable[[str], None] | None = None):
        self.search = search
        self.rounds_fn = rounds_fn
        #: verdicts stored by an earlier run of the search (resumed): taken, not measured again
        self.given: dict[int, Judgement] = dict(given or {})
        #: every verdict's centred rounds (their scale, the groups, their degrees of freedom): the noise
        self.groups: list[tuple[bool, list[list[float]], int]] = []
        #: paired comparisons of two states made (a step's two states, an interval's ends): whether
        #: they differ, and the rounds they rest on (None: given, from a stored verdict)
        self.checked: dict[tuple[int, int], tuple[bool, Paired | None]] = {
            k: (v, None) for k, v in (checked or {}).items()}
        #: the three outcomes of each paired comparison (True: they differ, False: they do not, None:
        #: unknown after every round); its words
        self.outcomes: dict[tuple[int, int], tuple[bool | None, str]] = {
            k: (v, "confirmed before (stored)") for k, v in (checked or {}).items()}
        self.on_note = on_note or (lambda text: None)
        #: rounds measured before the search, per pair of states (seed); the window's ends' rounds
        self.seeds: dict[tuple[int, int], list[Block]] = {}
        self.window_paired: Paired | None = None
        self.drifts: list[str] = []
        #: the statistic each process's samples are reduced by: chosen on the window's ends
        #: (:meth:`seed`) and held fixed for every verdict after
        self.choice: Choice = DEFAULT_CHOICE

    def judge(self) -> PairedMetricJudge:
        """The search's judge when it is the paired one, else a paired judge of the defaults."""
        s = self.search
        return paired_judge(s.judge) or PairedMetricJudge()

    def log(self) -> bool:
        """Whether the search compares ratios (every value it has seen positive), else differences."""
        vals = [x for v in self.search.samples.values() for x in v]
        return log_scale(vals) if vals else True

    def rounds(self, states: list[int], count: int, stop_on: int | None = None) -> Sequence[Block]:
        """``count`` rounds of ``states`` in alternation (the driver's), their values kept as context."""
        assert self.rounds_fn is not None
        if count <= 0:
            return []
        blocks = list(self.rounds_fn(states, count, stop_on))
        if self.choice.statistic != DEFAULT_CHOICE.statistic:  # each process by the statistic chosen
            blocks = [{st: v.by(self.choice.statistic) if isinstance(v, ProcessValue) else v for st, v in bl.items()}
                      for bl in blocks]
        for bl in blocks:
            for st, v in bl.items():
                if v is not None:
                    self.search.samples.setdefault(st, []).append(v)
        return blocks

    # -- the noise and the smallest step, on the paired scale ------------------------------------------
    def noise(self, p: Paired | None, log: bool) -> tuple[float, int]:
        """One process's standard deviation on the ``log`` scale (or not): pooled over every
        verdict's centred rounds kept so far and ``p``'s."""
        groups = [(g, dof) for lg, g, dof in self.groups if lg == log]
        if p is not None:
            groups.append(p.noise_groups())
        s0 = self.search.samples.get(0)
        return self.judge().noise([g for g in groups if g[0]], log, location(s0) if s0 else 1.0)

    def delta(self, sigma: float, log: bool) -> float:
        """The smallest step searched for on the paired scale: --min-change (a ratio on a log scale),
        or the window's own change when smaller (its ends compared in rounds, else as measured)."""
        s = self.search
        s0, s1 = s.samples.get(0), s.samples.get(s.n - 1)
        ends = self.window_paired
        if log:
            want = math.log1p(s.min_change)
            if ends is not None and ends.log:
                want = min(want, abs(math.log1p(ends.difference(0, s.n - 1))))
            elif s0 and s1 and min(s0) > 0 and min(s1) > 0:
                want = min(want, abs(math.log(location(s1) / location(s0))))
        else:
            want = s.min_change * (abs(location(s0)) if s0 else 1.0)
            if ends is not None and not ends.log:
                want = min(want, abs(ends.difference(0, s.n - 1)))
            elif s0 and s1:
                want = min(want, abs(location(s1) - location(s0)))
        return max(INDIFFERENCE * want, resolvable_change(sigma, s.max_repeats))

    def keep(self, p: Paired) -> None:
        """Rounds whose noise joins the window's (the ends', compared before the search)."""
        g, dof = p.noise_groups()
        if g:
            self.groups.append((p.log, g, dof))

    def drift(self, before: dict[int, list[float]], p: Paired, sigma: float) -> None:
        """The states of a verdict that were measured before read alike differently now: the
        machine drifted (said; the paired verdict cancelled it). Only values of one statistic are
        compared: where the processes are reduced by one chosen on the window's ends, the values
        measured before of other processes (the scan's: their medians) are left out."""
        samples = self.search.samples
        moved = []
        for st in p.states:
            if before.get(st):
                now = samples.get(st, [])[len(before[st]):]
                was = before[st] if self.choice.statistic == DEFAULT_CHOICE.statistic else \
                    [v for v in before[st] if isinstance(v, ProcessValue)]
                if was:
                    moved.append(drift(was, now, sigma, p.log))
        if not moved:
            return
        signs = {c > 0 for c, _ in moved}
        change = float(np.median([c for c, _ in moved]))
        level = 1.0 if p.log else abs(location(samples.get(0) or [1.0])) or 1.0
        if len(signs) == 1 and min(z for _, z in moved) >= DRIFT_Z and abs(change) / level >= DRIFT_MIN:
            which = "these states were" if len(moved) > 1 else "this state was"
            text = self.judge().drift_words(change, p.log, f"since {which} measured before")
            self.drifts.append(text)
            self.on_note(text)

    def by(self) -> str:
        """What a verdict's words say of the statistic its processes were reduced by: nothing when
        no choice was made (one sample a process)."""
        c = self.choice
        return f", each process by its {WORDS[c.statistic]} (chosen on the window's ends)" if c.candidates > 1 else ""

    # -- the two questions the search asks ----------------------------------------------------------
    def decide(self, i: int, a: int, b: int) -> Judgement:
        """Probe ``i`` between ``a`` and ``b`` from rounds of the three in alternation: more rounds
        while unsure (half as many again each time), up to ``max_repeats`` rounds."""
        s, pj = self.search, self.judge()
        before = {st: list(s.samples.get(st, ())) for st in (a, i, b)}
        blocks: list[Block] = []
        want = max(MIN_ROUNDS, s.repeats)
        while True:
            blocks += self.rounds([a, i, b], want - len(blocks), stop_on=i)
            if i in s.failed:
                return pj.untestable_level(s.failed[i])
            log = self.log()
            p = Paired.of(blocks, [a, i, b], log)
            final = len(blocks) >= s.max_repeats
            if p.rounds:
                sigma, dof = self.noise(p, log)
                j = pj.level_paired(p, a, i, b, sigma, dof, self.delta(sigma, log), final)
                if j.level is not Level.UNSURE:
                    self.keep(p)
                    self.drift(before, p, sigma)
                    return Judgement(j.level, j.reason + self.by(), j.margin)
            elif final:
                return Judgement(Level.SKIP, f"the interval's ends did not both run in any of {len(blocks)} rounds")
            want = len(blocks) + max(1, more_rounds(len(blocks), s.max_repeats))

    def apart(self, a: int, b: int) -> bool:
        """Whether states ``a`` and ``b`` differ, from rounds of the two in alternation (three
        outcomes: more rounds while unknown, up to ``max_repeats``; then the likelier). Asked once
        per pair: the answer is kept in ``checked`` (and its words in ``outcomes``)."""
        if (a, b) in self.checked:
            return self.checked[(a, b)][0]
        s, pj = self.search, self.judge()
        before = {st: list(s.samples.get(st, ())) for st in (a, b)}
        blocks: list[Block] = list(self.seeds.pop((a, b), []))
        want = max(MIN_ROUNDS if (a, b) != (0, s.n - 1) else END_ROUNDS, s.repeats, len(blocks))
        while True:
            blocks += self.rounds([a, b], want - len(blocks))
            log = self.log()
            p = Paired.of(blocks, [a, b], log)
            final = len(blocks) >= s.max_repeats
            if p.rounds:
                sigma, dof = self.noise(p, log)
                d, words = pj.differ_paired(p, a, b, sigma, dof, self.delta(sigma, log), final)
                if d is not None or final:
                    self.keep(p)
                    self.drift(before, p, sigma)
                    self.checked[(a, b)] = (d is not False, p)
                    self.outcomes[(a, b)] = (d, words + self.by())
                    return d is not False
            elif final:
                self.checked[(a, b)] = (True, None)
                self.outcomes[(a, b)] = (None, f"no round of {len(blocks)} ran both states")
                return True
            want = len(blocks) + max(1, more_rounds(len(blocks), s.max_repeats))

    # -- what the driver hands over, and reads back -----------------------------------------------------
    def seed(self, a: int, b: int, p: Paired, held: Choice | None = None) -> None:
        """Rounds of ``a`` and ``b`` measured before the search (the window's ends, compared first):
        their noise joins the window's, they give the window's change, and a comparison of the two
        (the confirmation of a two-state window) goes on from them. On them the statistic each
        process is reduced by is chosen (:func:`~hourly.analysis.process_stat.choose_statistic`, as
        the ends' verdict chose it: hourly.analysis.judges.paired), and held for every verdict after;
        ``held``: the choice an earlier call made on them and stored (a resumed search), held as it
        is — never chosen again, so that no verdict of one search reads its processes otherwise."""
        self.choice = held if held is not None else choose_statistic(p.processes(a), p.processes(b))
        p = p.reduced(self.choice.statistic)
        self.keep(p)
        self.window_paired = p
        self.seeds[(a, b)] = [{a: x, b: y} for x, y in zip(p.raw(a), p.raw(b), strict=True)]

    def check(self, a: int, b: int) -> tuple[bool, Paired | None] | None:
        """The paired comparison of ``a`` and ``b`` the search made (None: none)."""
        return self.checked.get((a, b))
