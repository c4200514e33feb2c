"""One window search (:class:`~hourly.analysis.step_search.StepSearch`) of metric mode and what it owes
the store: every stored measurement handed to it, its rounds measured through the lab, every verdict
recorded as it is reached (the builds and runs that went to more samples of an interval's end in
rows of their own), the confirmation of each step it pins. It outlives a window: the rest of a
window after a step goes on with the same search (hourly.bisect.metric_drive.Going).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Sequence

from hourly.analysis.bisection import State, Step
from hourly.analysis.judges import PairedJudge, Verdict, WindowJudge
from hourly.analysis.judges import metric as rules
from hourly.analysis.judges.metric import Judgement, Level, MetricJudge
from hourly.analysis.paired import Paired
from hourly.analysis.paired_verdicts import PairedVerdicts
from hourly.analysis.process_stat import Choice, ProcessValue
from hourly.analysis.step_search import StepSearch
from hourly.bisect.paired_rounds import measure_rounds
from hourly.bisect.records import Probe, Taken
from hourly.errors import UserError
from hourly.model import Pair, Status
from hourly.text.plurals import plural

#: what a measurement that ran the benchmark and failed is: the kind of state a crash window holds
CRASHES = (Status.CRASHED.value, Status.TIMEOUT.value, Status.NO_METRIC.value)


def given_level(row: dict) -> Judgement | None:
    """A stored probe verdict as the window search's level (a resumed paired search takes it)."""
    v = row.get("verdict")
    if v == Verdict.GOOD.value:
        return Judgement(Level.LOW, row.get("reason") or "")
    if v == Verdict.BAD.value:
        return Judgement(Level.NEITHER if row.get("between") else Level.HIGH, row.get("reason") or "")
    if v == Verdict.SKIP.value:
        return Judgement(Level.SKIP, row.get("reason") or "")
    return None

def resumed(pairs: list[Pair], rows: list[dict]) -> tuple[dict[int, Judgement], dict[tuple[int, int], bool]]:
    """A paired search over ``pairs`` resumed: the verdicts it stored in ``rows`` (taken, not measured
    again: its rounds are gone) and the step it confirmed. (An unpaired search decides again from
    the stored samples.)"""
    index = {p: i for i, p in enumerate(pairs)}
    given: dict[int, Judgement] = {}
    confirm: dict[str, tuple[int, str]] = {}
    for r in rows:
        i = index.get(Pair(r["xla"], r["jax"]))
        if i is None:
            continue
        if r["role"] == "probe" and (j := given_level(r)) is not None:
            given[i] = j
        elif r["role"] in ("confirm_good", "confirm_bad"):
            confirm[r["role"]] = (i, r["verdict"])
    checked = {}
    if "confirm_good" in confirm and "confirm_bad" in confirm:
        (lo, vg), (hi, vb) = confirm["confirm_good"], confirm["confirm_bad"]
        checked[(lo, hi)] = vg == Verdict.GOOD.value and vb == Verdict.BAD.value
    return given, checked


def stored_choice(rows: list[dict]) -> Choice | None:
    """The per-process statistic a paired search chose on its window's ends, stored with their rows
    (None: none stored, e.g. a store written before it was)."""
    for r in rows:
        if r.get("role") == "end" and r.get("statistic"):
            return Choice.stored(r["statistic"])
    return None


if TYPE_CHECKING:
    from hourly.bisect.lab import Lab, WindowState


def take_riding(riding: dict[tuple[Pair, ...], list[dict[Pair, float | None]]], pairs: list[Pair],
                note: Callable[[str], None], label: str | None) -> list[dict[Pair, float | None]]:
    """The rounds of the window's ends that measured ``pairs``' probe too (hourly.bisect.metric_drive:
    ``separate_paired``'s rider), taken — all of them, however few rounds the verdict asks for: it
    reads every round it was measured in, before it measures; ``label``: the verdict as it
    begins, said once with how many there are."""
    rode = riding.get(tuple(pairs), [])
    given, rode[:] = list(rode), []
    if given and label is not None:
        note(f"{label}: {plural(len(given), 'round')} measured beside the window's ends taken up")
    return given


def pool_decided(lab: "Lab", bid: int, pairs: list[Pair], verdicts: PairedVerdicts,
                 rode: Sequence[tuple[list[Pair], list[dict[Pair, float | None]]]] = ()) -> None:
    """A resumed search over ``pairs`` (``verdicts``: its paired verdicts): the noise of the verdicts
    a call before decided (their rounds kept with the probe in the middle, a stored confirmation's
    of its two states; ``rode``: those the ends took for their seed) joins the window's, as it had when they were decided — the noise a verdict
    of this call judges by does not depend on where the stops fell (on the TPU one step's check was
    judged at three noises, by where the calls had stopped: the ends' alone, σ 0.9 %; the ends' and
    the one probe measured in that call, 1.27 %; every verdict's, as never stopped, 0.99 %)."""
    stat = verdicts.choice.statistic if verdicts.choice.candidates > 1 else None
    found = list(rode)
    index = {p: i for i, p in enumerate(pairs)}
    for states in lab.kept_states(bid):
        at = [index.get(p) for p in states]
        # a probe's rounds (the probe in the middle) or a confirmed step's check (stored)
        if (len(at) == 3 and at[1] in verdicts.given) or (len(at) == 2 and tuple(at) in verdicts.checked):
            found.append((states, lab.take_rounds(bid, states, lab.kept_rounds(bid, states))))
    for trio, blocks in found:
        values = [{q: v.by(stat) if stat and isinstance(v, ProcessValue) else v for q, v in bl.items()}
                  for bl in blocks]
        if sum(all(v is not None for v in bl.values()) for bl in values) >= 2:
            verdicts.keep(Paired.of(values, trio))


class _Asked(Exception):
    """A throwaway search's first request (:func:`first_probe`): what it asked for."""


def first_probe(lab: "Lab", states: list[State], judge: MetricJudge, paired: PairedJudge,
                rows: list[dict] | None = None) -> Pair | None:
    """The state a paired search of ``states`` will probe first, asked of a search of its own that
    measures nothing (its first request stops it; the window's ends as given, any stored verdicts
    taken): the ends can be measured with it in their rounds (hourly.bisect.metric_drive's
    ``separate_paired``). None where that search asks for anything else first (a crash window's
    edge, the step's check) or nothing."""
    n = len(states)
    if n < 3:
        return None
    session = StepSession(lab, states, judge, paired, rows)
    search = session.search

    def measured(i: int, count: int) -> list[float] | None:
        raise _Asked(None)

    def rounds(sts: list[int], count: int, stop_on: int | None) -> list[dict[int, float | None]]:
        raise _Asked(sts)
    search.measure = measured
    search.paired_verdicts.rounds_fn = rounds
    search.on_verdict = lambda *a: None
    search.paired_verdicts.on_note = lambda *a: None
    worse = 0.95 if lab.higher_is_better else 1.05  # ends that differ as the search is told they do
    search.seed(0, n - 1, Paired.of([{0: 1.0 + k / 1000, n - 1: worse + k / 1000} for k in range(4)], [0, n - 1]))
    try:
        search.run()
    except _Asked as e:
        sts = e.args[0]
        if sts is not None and len(sts) == 3 and sts[0] == 0 and sts[2] == n - 1:
            return session.pairs[sts[1]]
    return None


class StepSession:
    """The window search over ``states`` (see the module's text)."""

    def __init__(self, lab: "Lab", states: list[State], judge: MetricJudge, paired: PairedJudge | None,
                 rows: list[dict] | None = None, ends: "tuple[bool, Paired | None] | None" = None):
        self.lab = lab
        #: the window's judge: the search is handed it whole, the session calls it as a WindowJudge
        #: (``paired``: the same judge, its verdicts paired; None: they are not)
        self.judge: WindowJudge = judge
        self.pairs = [st.pair for st in states]
        known: dict[int, list[float]] = {}
        failed: dict[int, str] = {}
        crashed: set[int] = set()
        for i, pair in enumerate(self.pairs):
            why = lab.known_failed(pair)
            evs = lab.stored(pair)
            samples = [x for e in evs if e.ok for x in e.samples]
            if samples:
                known[i] = samples
            elif why or evs:
                failed[i] = why or next(rules.failed(e).reason for e in evs if not e.ok)
                if not why and any(e.status in CRASHES for e in evs):
                    crashed.add(i)
        self.pending: dict[int, list[int]] = {}  # builds, runs and samples not yet in a recorded row
        self.drive: WindowState | None = None    # the window whose rows the verdicts go to
        self.recorded: set[Pair] = set()          # states with a verdict row in that window
        #: paired verdicts (hourly.analysis.judges.paired): every verdict from rounds of the states it
        #: compares, measured in alternation through the lab (hourly.bisect.metric_drive.measure_rounds)
        self.paired = paired is not None
        self.paired_judge = paired
        self.round_no = 0  # rounds measured so far: each round's order alternates
        #: paired rounds so far, by the states they compare (a verdict's progress reads them all)
        self.history: dict[tuple[int, ...], list[dict[Pair, float | None]]] = {}
        self.probed: list[int] = []  # the states probed in rounds, in order ("probe 3 of ~7")
        self.riding: dict[tuple[Pair, ...], list[dict[Pair, float | None]]] = {}  # taken first: take_riding
        given, checked = resumed(self.pairs, rows or []) if self.paired else ({}, {})
        # a resumed search numbers its probes on from those an earlier call decided (stored verdicts)
        self.probed += sorted(given)
        self.search = StepSearch(len(states), self.measure, repeats=lab.repeats, max_repeats=lab.max_repeats,
                                 min_change=lab.min_change, higher_is_better=lab.higher_is_better,
                                 cost=lambda i: lab.cost(self.pairs[i]), known=known, failed=failed,
                                 on_verdict=self.on_verdict, stop_at_regression=True, judge=judge,
                                 rounds=self.rounds if self.paired else None, crash_windows=lab.workers == 1,
                                 given=given, checked=checked, on_edge=self.on_edge, on_note=lab.handler.note)
        self.search.crashed |= crashed
        # resumed: the statistic chosen on the ends in a call before is held as stored, whatever the
        # rounds kept of them would choose now
        chosen = stored_choice(rows or []) if self.paired else None
        if ends is not None and ends[1] is not None:  # the window's ends, compared in rounds already
            self.search.seed(0, len(states) - 1, ends[1], chosen)
        elif chosen is not None:  # resumed, no rounds of the ends kept (a store from before they were)
            self.search.paired_verdicts.choice = chosen
        held = self.search.paired_verdicts.choice
        if self.paired and held.candidates > 1 and (hold := getattr(lab, "hold_statistic", None)):
            hold(held.statistic)  # the samples a process gives are chosen for the noise of its values

    def record(self, p: Probe) -> Probe:
        assert self.drive is not None  # next_regression attaches the window first
        return self.drive.record(p)

    # -- measuring --------------------------------------------------------------------------------
    def measure(self, i: int, count: int) -> list[float] | None:
        return self.many({i: count})[i]

    def many(self, reqs: dict[int, int]) -> dict[int, list[float] | None]:
        """One round: every state asked for, through the lab."""
        out: dict[int, list[float] | None] = {}
        got = self.lab.measure_many([(self.pairs[i], c) for i, c in reqs.items()])
        for i, t in zip(reqs, got, strict=True):
            ev, builds, runs, samples = t.evidence, t.builds, t.runs, t.samples
            self.owe(i, builds, runs, samples)
            if not ev.ok:
                self.search.mark_untestable(i, rules.failed(ev).reason, crashed=ev.status in CRASHES)
                out[i] = None
            else:
                out[i] = list(ev.samples)
        return out

    def rounds(self, states: list[int], count: int, stop_on: int | None) -> list[dict[int, float | None]]:
        """``count`` rounds of ``states`` measured in alternation through the lab (paired verdicts);
        ``stop_on``: a state whose failure ends them (it is untestable, and says why)."""
        index = {self.pairs[i]: i for i in states}
        stop = self.pairs[stop_on] if stop_on is not None else None
        key = tuple(states)
        earlier = self.history.setdefault(key, [])
        choice = self.search.paired_verdicts.choice  # the progress lines read the statistic in force
        pairs = [self.pairs[i] for i in states]
        label = self.label(stop_on)
        given = take_riding(self.riding, pairs, self.lab.handler.note, label if not earlier else None)
        earlier += given
        # called however many rounds were given: it takes any kept ones (all of them) too
        blocks, taken = measure_rounds(self.lab, pairs, max(0, count - len(given)), self.round_no, stop, label,
                                       earlier, choice.statistic if choice.candidates > 1 else None,
                                       bid=self.drive.bid if self.drive is not None else None)
        earlier += blocks
        self.round_no += len(blocks)
        blocks = [*given, *blocks]
        for pair, t in taken:
            ev, builds, runs, samples = t.evidence, t.builds, t.runs, t.samples
            i = index[pair]
            self.owe(i, builds, runs, samples)
            if not ev.ok and i == stop_on:
                self.search.mark_untestable(i, rules.failed(ev).reason, crashed=ev.status in CRASHES)
        return [{index[p]: v for p, v in bl.items()} for bl in blocks]

    def label(self, stop_on: int | None) -> str:
        """The verdict the rounds are for, in words: ``probe 3 of ~7`` (about as many probes as halvings
        of the window, more when the search has taken more), or ``step check`` (the rounds of two
        states compared apart: a step's last good and first bad)."""
        if stop_on is None:
            return "step check"
        if stop_on not in self.probed:
            self.probed.append(stop_on)
        k = self.probed.index(stop_on) + 1
        about = max(k, math.ceil(math.log2(max(len(self.pairs) - 1, 2))))
        return f"probe {k} of ~{about}"

    def on_edge(self, i: int, runs: bool) -> None:
        """An exit-status probe of a crash window's edge: its row (it crashed, or it runs and its
        level is not judged yet)."""
        builds, n, sampled = self.pending.pop(i, [0, 0, 0])
        pair = self.pairs[i]
        if runs:
            c = self.judge.edge(True)
            self.record(Probe("edge", pair, c.verdict, c.reason, list(self.search.samples.get(i, [])), builds=builds,
                              runs=n, run_samples=sampled))
        else:
            self.recorded.add(pair)
            c = self.judge.edge(False, self.search.failed.get(i, "crashed"))
            self.record(Probe("edge", pair, c.verdict, c.reason, builds=builds, runs=n, run_samples=sampled))

    def owe(self, i: int, builds: int, runs: int, samples: int = 0) -> None:
        acc = self.pending.setdefault(i, [0, 0, 0])
        acc[0] += builds
        acc[1] += runs
        acc[2] += samples

    def on_verdict(self, i: int, j: Judgement) -> None:
        builds, runs, sampled = self.pending.pop(i, [0, 0, 0])
        v = rules.verdict_of(j.level)
        pair = self.pairs[i]
        role = "end" if pair in self.recorded else "probe"  # resumed: the state has its row already
        if role == "probe" or builds or runs:
            self.recorded.add(pair)
            self.record(Probe(role, pair, v, j.reason, list(self.search.samples.get(i, [])),
                              builds=builds, runs=runs, between=j.level is Level.NEITHER, run_samples=sampled))

    # -- the search ------------------------------------------------------------------------------
    def next_regression(self, d: "WindowState") -> Step:
        """The earliest regression the search pins from where it stands, for window ``d``; with
        workers, round by round (the same search, W states measured together)."""
        self.drive = d
        self.recorded = {Pair(r["xla"], r["jax"]) for r in d.rows if r["role"] == "probe"}
        lab, search = self.lab, self.search
        seen = len(search.steps)
        steps = (search.run_rounds(self.many, lab.workers)[0] if lab.workers > 1 else search.run())[seen:]
        self.flush(d)
        regressions = [st for st in steps if st.regression(lab.higher_is_better)]
        if not regressions:
            raise UserError(f"no step of {lab.min_change * 100:g} % or more between {d.where(' and ')}: the ends differ, "
                            "but no probe confirmed a step",
                            "pass a smaller --min-change, or a larger --max-repeats for a noisy benchmark")
        return regressions[0]

    def flush(self, d: "WindowState") -> None:
        """Rows for the runs (and builds) that went to more samples of an interval's end."""
        search, n = self.search, len(self.pairs)
        for i, (builds, runs, sampled) in self.pending.items():
            if not (builds or runs):
                continue
            ahead = search.measured_ahead(i)
            pair = self.pairs[i]
            unjudged = i not in search.verdicts and 0 < i < n - 1  # an inner state, measured ahead
            if unjudged and i in search.failed:
                # measured ahead in a round and untestable: the search never probes it, this is its verdict
                self.recorded.add(pair)
                c = self.judge.untestable(search.failed[i])
                d.record(Probe("probe", pair, c.verdict, c.reason, builds=builds, runs=runs, run_samples=sampled))
            elif unjudged and ahead:
                # measured ahead in a round and not judged yet: its verdict row comes when it is
                d.record(Probe("ahead", pair, rules.ahead(), f"{plural(len(ahead), 'sample')} "
                               "measured ahead in a round, not judged yet", ahead, builds=builds, runs=runs,
                               run_samples=sampled))
            else:
                judged = search.verdicts.get(i)
                v = rules.interval_end(i, n, judged.level if judged is not None else None)
                samples = list(search.samples.get(i, []))
                d.record(Probe("end", pair, v, f"{plural(len(samples), 'sample')} of an interval's end",
                               samples, builds=builds, runs=runs, run_samples=sampled))
        self.pending.clear()

    # -- confirmation ------------------------------------------------------------------------------
    def confirmation(self, d: "WindowState", last_good: Pair, first_bad: Pair, step: Step) -> bool:
        """Fresh measurements of the two states the answer rests on (stored ones reused). With
        workers, both are measured in one round, with the samples a verdict has taken so far,
        beside the next round of the search when the window goes on (:meth:`round_ahead`)."""
        if self.paired:
            return self.confirmation_paired(d, last_good, first_bad, step)
        confirm = {}
        todo = [(role, pair) for role, pair in (("confirm_good", last_good), ("confirm_bad", first_bad))
                if not d.stored.get((role, pair))]
        first = self.round_ahead([p for _, p in todo]) if todo else {}
        spare: dict[Pair, list[Taken]] = {}
        for role, pair in (("confirm_good", last_good), ("confirm_bad", first_bad)):
            r = d.stored.get((role, pair))
            if r:
                confirm[role] = Verdict(r["verdict"])
            else:
                partner = first_bad if role == "confirm_good" and len(todo) == 2 else None
                confirm[role] = d.record(self.confirm(step, role, pair, first.get(pair), spare, partner)).verdict
        return self.judge.confirmed(confirm["confirm_good"], confirm["confirm_bad"])

    def confirmation_paired(self, d: "WindowState", last_good: Pair, first_bad: Pair, step: Step) -> bool:
        """The last good and first bad states compared in rounds of the two (paired; the search's own
        comparison of the step's two states when it made one, else made now): confirmed when they
        differ, by at least the smallest step searched for; unknown after every round, or the same,
        is not a confirmation (a candidate). Stored confirmations are reused."""
        stored = {role: d.stored.get((role, pair)) for role, pair in (("confirm_good", last_good),
                                                                     ("confirm_bad", first_bad))}
        if all(stored.values()):
            return self.judge.confirmed(*(Verdict(r["verdict"]) for r in stored.values()))  # type: ignore[index]
        search = self.search
        if (step.lo, step.hi) not in search.checked:
            search.paired_verdicts.apart(step.lo, step.hi)
            self.flush(d)
        _, p = search.checked[(step.lo, step.hi)]
        outcome, words = search.outcomes.get((step.lo, step.hi), (None, "not compared"))
        rows = {}
        assert self.paired_judge is not None  # confirmed in rounds: the paired judge's
        for role, pair, i, want in (("confirm_good", last_good, step.lo, Verdict.GOOD),
                                    ("confirm_bad", first_bad, step.hi, Verdict.BAD)):
            samples = p.raw(i) if p is not None else []
            c = self.paired_judge.in_rounds(want, role, outcome, p.rounds if p is not None else 0, words)
            rows[role] = d.record(Probe(role, pair, c.verdict, c.reason, samples)).verdict
        return self.judge.confirmed(rows["confirm_good"], rows["confirm_bad"])

    def round_ahead(self, fresh: list[Pair]) -> dict[Pair, Taken]:
        """With workers: one round holding fresh samples of ``fresh`` (the states to confirm, as many
        as a verdict has taken so far) and, in the slots left, the states the search of the rest of
        the window will probe first (:meth:`RoundPlanner.plan_ahead`), their samples handed to it as
        samples measured ahead. Without workers: nothing (each state is measured as it is asked)."""
        lab, search = self.lab, self.search
        if lab.workers < 2 or not fresh:
            return {}
        planner = search.planner
        n = planner.typical()
        mine = {i for i, p in enumerate(self.pairs) if p in fresh}
        ahead = planner.plan_ahead(lab.workers - len(fresh), mine) if search.more_after else []
        more = planner.top_ups(lab.workers - len(fresh) - len(ahead), mine) if search.more_after else {}
        got = lab.measure_many([(p, n) for p in fresh] + [(self.pairs[i], n) for i in ahead]
                               + [(self.pairs[i], c) for i, c in more.items()])
        for i, t in zip([*ahead, *more], got[len(fresh):], strict=True):
            ev, builds, runs, samples = t.evidence, t.builds, t.runs, t.samples
            self.owe(i, builds, runs, samples)
            if not ev.ok:
                search.mark_untestable(i, rules.failed(ev).reason)
            else:
                search.give(i, ev.samples)
        return dict(zip(fresh, got[:len(fresh)], strict=True))

    def confirm(self, step: Step, role: str, pair: Pair, first: "Taken | None" = None,
                spare: "dict[Pair, list[Taken]] | None" = None, partner: Pair | None = None) -> Probe:
        """Fresh runs of one of the step's two states (no build: the wheel is cached), judged between
        the step's two levels: the last good state must be at the earlier, the first bad at the later.
        ``first``: a fresh measurement of it taken already (in a round with others), used first;
        ``spare``: fresh measurements per state taken already, each used first (all of them);
        ``partner``: the step's other state, confirmed next: with workers, each round of more fresh
        runs of this one carries as many of the partner's (into ``spare``), so the two sequential
        tests take their doublings in the same rounds, not one after the other."""
        lab = self.lab
        got: list[float] = []
        cost = [0, 0, 0]  # builds, runs, samples
        spare = spare if spare is not None else {}
        given = spare.setdefault(pair, [])
        if first is not None:
            given.insert(0, first)

        def sample(want: int) -> list[float] | None:
            while given or len(got) < want:
                if given:
                    t = given.pop(0)
                elif partner is not None and lab.workers > 1:
                    have = sum(len(x.evidence.samples) for x in spare.get(partner, []))
                    reqs = [(pair, want - len(got))] + ([(partner, want - have)] if want > have else [])
                    both = lab.measure_many(reqs)
                    t, rest = both[0], both[1:]
                    spare.setdefault(partner, []).extend(rest)
                else:
                    t = lab.measure_many([(pair, want - len(got))])[0]
                cost[0] += t.builds
                cost[1] += t.runs
                cost[2] += t.samples
                if not t.evidence.ok:
                    return None
                got.extend(t.evidence.samples)
            return got
        j = self.search.sequential(sample, step.lo, step.hi)
        return Probe(role, pair, rules.confirming(j.level), j.reason, got, builds=cost[0], runs=cost[1],
                     run_samples=cost[2])
