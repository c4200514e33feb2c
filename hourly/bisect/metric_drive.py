"""Metric mode's window: the ends' samples until they separate, the window search
(:class:`~hourly.analysis.step_search.StepSearch`) over every stored measurement, the confirmation
of the step it pins by fresh samples of its two states, and the samples the mixed pairs of a step
that moves both repositories are judged with. Every verdict is the metric judge's
(:class:`~hourly.analysis.judges.metric.MetricJudge`); this module measures and records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hourly.analysis.bisection import Bounds, State, split_points
from hourly.analysis.judges import Evidence, Verdict
from hourly.analysis.judges.base import samples_of
from hourly.analysis.judges.metric import MIN_END_SAMPLES, MetricJudge
from hourly.analysis.rounds import first_round_samples
from hourly.answers import EndSamples
from hourly.bisect.records import Probe
from hourly.bisect.step_session import StepSession
from hourly.errors import UserError
from hourly.model import Pair
from hourly.plurals import plural
from hourly.scan.table import SCAN_ORIGIN

if TYPE_CHECKING:
    from hourly.bisect.drive import Lab, Taken, WindowDrive


def _from(origins: list[str]) -> str:
    """``3 from the scan, 2 from bisect``"""
    c = Counter(origins)
    return ", ".join(f"{n} from {'the scan' if o == SCAN_ORIGIN else o}" for o, n in sorted(c.items())) or "none"


def _judge(lab: "Lab") -> MetricJudge:
    j = lab.judge
    assert isinstance(j, MetricJudge)  # the window search is the metric judge's
    return j


class MetricEnds:
    """A window's two ends (the window's, then the step's): their samples — the scan's and any
    earlier bisection's, never changed — and more measured (rows of their own) as the verdicts need."""

    def __init__(self, d: "WindowDrive"):
        self.d, self.lab = d, d.lab
        self.ahead: list[Pair] = []  # probes for the ends' round (plan)
        self.want = 0                 # and the samples each state of that round gets

    def plan(self) -> None:
        """With more workers than the two ends, the first round of a fresh window carries probes
        too: the states that split it into equal parts of expected cost (:func:`split_points`),
        measured beside the ends and handed to the search as stored samples."""
        lab, states = self.lab, self.d.states
        if lab.workers > 2 and not self.d.rows and len(states) > 2:
            costs = {i: lab.cost(st.pair) for i, st in enumerate(states)}
            self.ahead = [states[i].pair for i in split_points(len(states), lab.workers - 2, (), costs)]
            self.want = first_round_samples(lab.min_change, lab.repeats, lab.max_repeats)

    def separate(self) -> tuple[list[float], list[float]]:
        """Both ends' samples, taken until they separate (Pinpoint's adaptive attempts) and checked
        to differ in the direction of the hunt; they are the references of the verdicts that follow."""
        lab, judge = self.lab, _judge(self.lab)
        good_pair, bad_pair = self.d.ends
        want = min(max(MIN_END_SAMPLES, self.want), lab.max_repeats)  # with probes beside: as they need
        while True:  # noisy ends get more samples until they separate
            got = self.round(want, good_pair, bad_pair)
            good, _, _ = self.samples(good_pair, Verdict.GOOD, want, got.get(good_pair))
            bad, _, _ = self.samples(bad_pair, Verdict.BAD, want, got.get(bad_pair))
            if not good or not bad:
                raise lab.unbuilt_end(bad_pair if good else good_pair, "bad" if good else "good") or UserError(
                    f"an end of {self.d.where()} has no metric (good {plural(len(good), 'sample')}, bad {len(bad)})",
                    "pick ends that measure, or use --mode exit for crashes")
            apart, sep = judge.apart(good, bad)
            if apart or want >= lab.max_repeats:
                break
            want = min(2 * want, lab.max_repeats)
        judge.check_ends(good, bad, sep, lab.higher_is_better, lab.find_fix, self.d.where())
        return good, bad

    def round(self, want: int, *pairs: Pair) -> dict[Pair, "Taken"]:
        """With workers, the ends short of ``want`` samples measured in one round."""
        lab = self.lab
        if lab.workers < 2:
            return {}
        short = {p: want - n for p in pairs if (n := len(samples_of(lab.stored(p)))) < want}
        if len(short) < 2:
            return {}
        extra = [p for p in self.ahead if p not in short][:lab.workers - len(short)]
        self.ahead = []
        got = lab.measure_many(list(short.items()) + [(p, want) for p in extra])
        for pair, (ev, builds, runs, samples) in zip(extra, got[len(short):], strict=True):
            self.record_ahead(pair, ev, builds, runs, "measured ahead in the ends' round, not judged yet", samples)
        return dict(zip(short, got[:len(short)], strict=True))

    def record_ahead(self, pair: Pair, ev: Evidence, builds: int, runs: int, why: str, sampled: int = 0) -> None:
        """The row of a state measured ahead of the search: its verdict row follows when the search
        judges it; one that failed is untestable now (the search never probes it)."""
        if not ev.ok:
            c = MetricJudge.failed(ev)
            self.d.record(Probe("probe", pair, c.verdict, c.reason, builds=builds, runs=runs, run_samples=sampled))
        else:
            self.d.record(Probe("ahead", pair, MetricJudge.ahead(ev), why, list(ev.samples), builds=builds, runs=runs,
                                run_samples=sampled))

    def samples(self, pair: Pair, side: Verdict, want: int, got: "Taken | None" = None) -> tuple[list[float], int, int]:
        """The end's samples, measuring more (rows of their own, origin ``bisect``) until it has
        ``want``; ``got``: that measurement, taken already in a round with the other end."""
        stored = [e for e in self.lab.stored(pair) if e.ok and not (got and e.id == got[0].id)]
        samples = [x for e in stored for x in e.samples]
        origins = [e.origin for e in stored for _ in e.samples]
        builds = runs = 0
        if len(samples) < want:
            ev, builds, runs, sampled = got or self.lab.measure_many([(pair, want - len(samples))])[0]
            new = list(ev.samples) if ev.ok else []
            samples += new
            origins += [ev.origin] * len(new)
            self.d.record(Probe("end", pair, MetricJudge.end(side, samples),
                                f"{plural(len(samples), 'sample')} of the {side.value} end ({_from(origins)})",
                                list(ev.samples), builds=builds, runs=runs, run_samples=sampled))
        self.d.end_samples[side.value] = EndSamples(len(samples), dict(sorted(Counter(origins).items())))
        return samples, builds, runs

    def grow(self, good: list[float], bad: list[float], want: int) -> None:
        """The ends' samples as many as a probe's: their locations are as uncertain (runs, no builds)."""
        for ref, pair, side in ((good, self.d.ends[0], Verdict.GOOD), (bad, self.d.ends[1], Verdict.BAD)):
            if len(ref) < want:
                ref[:] = self.samples(pair, side, want)[0]

    def evaluate(self, pair: Pair, role: str, refs: tuple[list[float], list[float]]) -> Probe:
        """A state judged between ``refs`` (the step's two levels): from stored measurements when they
        decide, else measured (more repeats while unsure, the ends as many, up to --max-repeats)."""
        lab, judge = self.lab, _judge(self.lab)
        failed = lab.known_failed(pair)
        if failed:
            c = judge.untestable(failed)
            return Probe(role, pair, c.verdict, c.reason)
        stored = lab.stored(pair)
        builds = runs = sampled = 0
        good, bad = refs
        judge.against(good, bad)
        samples = samples_of(stored)
        if not samples and any(not e.ok for e in stored):
            c = MetricJudge.failed(next(e for e in stored if not e.ok))
            return Probe(role, pair, c.verdict, c.reason)
        while True:
            if samples:
                c = judge.call(Evidence(samples=tuple(samples)))
                if c.decided:
                    return Probe(role, pair, c.verdict, c.reason, samples, builds=builds, runs=runs, between=c.between,
                                 run_samples=sampled)
                need = c.more
                self.grow(good, bad, len(samples) + need)
            else:
                need = lab.repeats
            ev, b, r, n = lab.measure_many([(pair, need)])[0]
            builds, runs, sampled = builds + b, runs + r, sampled + n
            if not ev.ok:
                c = MetricJudge.failed(ev)
                return Probe(role, pair, c.verdict, c.reason, samples, builds=builds, runs=runs, run_samples=sampled)
            samples = samples + list(ev.samples)


@dataclass
class Going:
    """A window search whose rest of the window goes on: the search, the states it runs over, and
    where the window after its last step starts in them."""

    session: StepSession
    states: list[State]
    offset: int


class MetricDrive:
    """Metric mode's part of one window (:meth:`hourly.bisect.drive.WindowDrive.run`)."""

    def __init__(self, d: "WindowDrive"):
        self.d, self.lab = d, d.lab
        self.ends = MetricEnds(d)

    def run(self) -> tuple[Bounds, bool, bool]:
        """The ends (unless this is the rest of a window whose search goes on: it knows a step is
        left), the earliest regression, its confirmation; the bounds on the window's states, whether
        the window holds more after it, and whether it was confirmed."""
        d, lab = self.d, self.lab
        going: Going | None = lab.going
        if going is not None and [st.pair for st in going.states[going.offset:]] != [st.pair for st in d.states]:
            going = lab.going = None
        if going is None:
            self.ends.plan()
            self.ends.separate()
            session, parent, off = StepSession(lab, d.states), d.states, 0
        else:
            session, parent, off = going.session, going.states, going.offset
        step = session.next_regression(d)
        b = Bounds(step.lo - off, step.hi - off)
        more_after = session.search.more_after
        lab.going = Going(session, parent, step.hi)
        last_good, first_bad = d.states[b.lo].pair, d.states[b.hi].pair
        confirmed = session.confirmation(d, last_good, first_bad, step)
        session.flush(d)
        # blame compares the mixed pairs with the step's two levels
        self.refs = (session.search.ref(step.lo), session.search.ref(step.hi))
        d.ends = (last_good, first_bad)
        return b, more_after, confirmed

    def evaluate(self, pair: Pair, role: str) -> Probe:
        return self.ends.evaluate(pair, role, self.refs)

