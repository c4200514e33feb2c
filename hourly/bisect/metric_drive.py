"""Metric mode's window: the ends' samples until they separate, the window search
(:class:`~hourly.analysis.step_search.StepSearch`) over every stored measurement, the confirmation
of the step it pins by fresh samples of its two states, and the samples the mixed pairs of a step
that moves both repositories are judged with. Every verdict is the metric judge's
(:class:`~hourly.analysis.judges.metric.MetricJudge`, seen as a
:class:`~hourly.analysis.judges.window.WindowJudge`); this module measures and records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Mapping, Sequence

from hourly.analysis.bisection import Bounds, State, split_points
from hourly.analysis.judges import Evidence, PairedJudge, Verdict, WindowJudge
from hourly.analysis.judges import metric as rules
from hourly.analysis.judges.base import samples_of
from hourly.analysis.judges.metric import MIN_END_SAMPLES, Level, MetricJudge
from hourly.analysis.judges.paired import END_ROUNDS, MIN_ROUNDS, compare_ends, more_rounds, read_apart
from hourly.analysis.paired import Paired, drift
from hourly.analysis.process_stat import ProcessValue, choose_statistic
from hourly.analysis.rounds import first_round_samples
from hourly.answers import EndSamples
from hourly.bisect.paired_rounds import APART, measure_rounds
from hourly.bisect.records import Probe, Taken
from hourly.bisect.step_session import StepSession, first_probe, pool_decided
from hourly.bisect.windows import end_flag
from hourly.errors import UserError
from hourly.model import Pair
from hourly.scan.table import SCAN_ORIGIN
from hourly.text.plurals import plural

if TYPE_CHECKING:
    from hourly.analysis.bisection import Step
    from hourly.analysis.crash_window import CrashWindow
    from hourly.bisect.lab import WindowState


def _from(origins: list[str]) -> str:
    """``3 from the scan, 2 from bisect``"""
    c = Counter(origins)
    return ", ".join(f"{n} from {'the scan' if o == SCAN_ORIGIN else o}" for o, n in sorted(c.items())) or "none"


class MetricEnds:
    """A window's two ends (the window's, then the step's): their samples — the scan's and any
    earlier bisection's, never changed — and more measured (rows of their own) as the verdicts need.
    ``judge``: the window's (None: the ends' samples alone are taken, as a manual bisection offers
    the benchmark's verdicts against them); ``paired``: the same judge when its verdicts are paired."""

    def __init__(self, d: "WindowState", judge: WindowJudge | None = None, paired: PairedJudge | None = None):
        self.d, self.lab = d, d.lab
        self.judge, self.paired = judge, paired
        self.ahead: list[Pair] = []  # probes for the ends' round (plan)
        self.want = 0                 # and the samples each state of that round gets
        #: paired: the rounds of the ends that measured the search's first probe too, in the order of
        #: the three (separate_paired's ``rider``), for that probe's verdict to take first
        self.riding: list[dict[Pair, float | None]] = []
        self.rider_taken: list[Taken] = []  # its processes in them (builds, runs, samples)
        #: resumed: the rounds a probe decided in a call before rode in (A P B), taken here for the
        #: ends' seed; the search pools their noise as that probe's (hourly.bisect.step_session.pool_decided)
        self.rode_decided: list[tuple[list[Pair], list[dict[Pair, float | None]]]] = []

    def plan(self) -> None:
        """With more workers than the two ends, the first round of a fresh window carries probes
        too: the states that split it into equal parts of expected cost (:func:`split_points`),
        measured beside the ends and handed to the search as stored samples."""
        lab, states = self.lab, self.d.states
        if lab.workers > 2 and not self.d.rows and len(states) > 2:
            costs = {i: lab.cost(st.pair) for i, st in enumerate(states)}
            self.ahead = [states[i].pair for i in split_points(len(states), lab.workers - 2, (), costs)]
            self.want = first_round_samples(lab.min_change, lab.repeats, lab.max_repeats)

    def separate_paired(self, rider: Pair | None = None) -> tuple[bool, Paired | None]:
        """The window's two ends compared in rounds of the two (paired,
        :func:`~hourly.analysis.judges.paired.compare_ends`): different, the same, or unknown — unknown
        gets one more round at a time, up to --max-repeats rounds; different they must be, and the later end worse (better, finding a fix). Their
        earlier samples (the scan's) are context: a level that moved since is the machine's drift,
        said. A resumed window whose ends were compared already goes on from its rows.

        ``rider``: the state the search will probe first (hourly.bisect.step_session.first_probe).
        Once the ends read apart (:func:`~hourly.analysis.judges.paired.read_apart`), each round measures it too, between them (A
        P B, then B P A): the ends' verdict reads the ends of those rounds, and the probe's verdict
        takes them all first (``riding``) — its rounds hold the ends anyway, and the ends' verdict
        takes rounds enough for most probes; on an accelerator that saves a verdict's processes. A
        rider that fails to build or run is measured no more with them."""
        lab, d, judge = self.lab, self.d, self.paired
        assert judge is not None  # the paired ends are the paired judge's
        good_pair, bad_pair = d.ends
        trio = [good_pair, rider, bad_pair] if rider is not None else None
        if ("end", good_pair) in d.stored and ("end", bad_pair) in d.stored:
            # compared in a call before: not measured again; their kept rounds (a store of schema 10 on)
            # give the search the window's noise and change and its statistic, as when they were compared
            kept = lab.take_rounds(d.bid, d.ends, lab.kept_rounds(d.bid, d.ends))
            # and those a first probe rode in, with that probe's own since: the probe they carried is
            # found by its kept rounds, not taken to be this call's rider — once its verdict is stored,
            # this call's first probe is another, and the ends' rounds it rode in are the ends' still
            rode_with = next((q for q in [rider, *(st.pair for st in d.states[1:-1])]
                              if q is not None and lab.kept_rounds(d.bid, [good_pair, q, bad_pair])), None)
            if rode_with is not None:
                with_it = [good_pair, rode_with, bad_pair]
                rode = lab.take_rounds(d.bid, with_it, lab.kept_rounds(d.bid, with_it))
                if rode_with == rider:  # its verdict is not stored yet: it goes on from them all
                    self.riding = list(rode)
                else:
                    self.rode_decided.append((with_it, list(rode)))
                # the rounds the ends' verdict read: its row's samples (the first end row of the good end;
                # rows for the processes of later verdicts that measured an end, "end" too, come after it)
                verdict = next(r for r in d.rows if r["role"] == "end" and Pair(r["xla"], r["jax"]) == good_pair)
                compared = len(verdict.get("samples") or ())
                kept = [*kept, *rode[:max(0, compared - len(kept))]]
            p = Paired.of(kept, [good_pair, bad_pair]) if kept else None
            return True, p if p is not None and p.rounds else None
        before = {p: samples_of(lab.stored(p)) for p in (good_pair, bad_pair)}
        taken: list[tuple[Pair, Taken]] = []

        def unmeasured() -> UserError:
            """Why no round ran both ends: the end that failed (its build's log, or its run's reason)."""
            # the end that never measured (else the first that failed), and its failure
            never = [e for e in (good_pair, bad_pair) if not any(t.evidence.ok for q, t in taken if q == e)]
            pair = never[0] if never else next((q for q, t in taken if not t.evidence.ok), good_pair)
            side = "good" if pair == good_pair else "bad"
            failed = next((t.evidence for q, t in taken if q == pair and not t.evidence.ok), None)
            # a benchmark that exits 0 without the metric is read wrong (the regex), not crashing
            read = failed is not None and failed.status == "no_metric"
            return lab.unbuilt_end(pair, side) or UserError(
                f"the {end_flag(side, lab.find_fix)} end {pair.short()} of {d.where()} has no metric "
                f"({rules.failed(failed).reason if failed else 'no run'})",
                ("check --metric-regex against that log (the run exits 0 without a value it reads), or pick "
                 "ends that measure" if lab.metric is None else f"check that the benchmark prints `METRIC "
                 f"{lab.metric}: <value>` lines (that log), or pick ends that measure")
                if read else "pick ends that measure, or use --mode exit for crashes")

        riding = trio is not None

        def rounds(count: int, earlier: Sequence[Mapping[Pair, float | None]]) -> list[dict[Pair, float | None]]:
            nonlocal riding
            states = trio if trio is not None and riding and read_apart(earlier, good_pair, bad_pair) \
                else [good_pair, bad_pair]
            new, got = measure_rounds(lab, states, count, d.round_no, what="ends" if len(states) == 2 else
                                      "ends and probe 1", earlier=earlier, bid=d.bid)
            d.round_no += len(new)
            if len(states) == 3:
                if any(b.get(states[1]) is None for b in new):  # it failed: the search measures it alone
                    riding, self.riding = False, []
                else:
                    self.riding += new
                # what it cost goes to the probe's row (the search's verdict on it), not the ends'
                self.rider_taken += [t for q, t in got if q == states[1]]
            taken.extend(got)
            # an end whose build failed, or that measured nothing in its first rounds (kept ones too),
            # stops the ends there: more rounds would only repeat it (a process on an accelerator costs seconds)
            rounds_so_far = [*earlier, *new]
            if any(lab.unbuilt_end(q, side) for q, side in ((good_pair, "good"), (bad_pair, "bad"))) or (
                    len(rounds_so_far) >= END_ROUNDS
                    and not all(any(b.get(e) is not None for b in rounds_so_far) for e in (good_pair, bad_pair))):
                raise unmeasured()
            return new

        ends = compare_ends(judge, rounds, good_pair, bad_pair, cap=lab.max_repeats, min_change=lab.min_change,
                            repeats=lab.repeats)
        p, outcome, words, sigma = ends.paired, ends.outcome, ends.words, ends.sigma
        if p.rounds == 0:  # no round ran both ends, up to --max-repeats
            raise unmeasured()
        judge.check_ends_paired(p, outcome, words, lab.higher_is_better, lab.find_fix, d.where())
        self.drifted(before, p, sigma, "since the scan measured the ends" if any(
            e.origin == "scan" for q in (good_pair, bad_pair) for e in lab.stored(q)) else "since the ends were measured before")
        # the statistic the search will hold (StepSession seeds it with these rounds: the same choice),
        # stored with the ends' rows so that a resumed search holds it too
        chosen = choose_statistic(p.processes(good_pair), p.processes(bad_pair)).as_dict()
        for pair, side in ((good_pair, Verdict.GOOD), (bad_pair, Verdict.BAD)):
            mine = [t for q, t in taken if q == pair]
            values = p.raw(pair)
            c = judge.in_rounds(side, "end", outcome, p.rounds, words)
            d.record(Probe("end", pair, c.verdict, c.reason, values,
                           builds=sum(t.builds for t in mine), runs=sum(t.runs for t in mine),
                           run_samples=sum(t.samples for t in mine), statistic=chosen))
            d.end_samples[side.value] = EndSamples(len(values), {"bisect": len(values)})
        return outcome is not False, p

    def drifted(self, before: dict[Pair, list[float]], p: Paired, sigma: float, since: str) -> None:
        """The ends read alike differently now than in their earlier samples: the machine drifted."""
        from hourly.analysis.judges.paired import DRIFT_MIN, DRIFT_Z
        moved = [drift(before[q], p.raw(q), sigma, p.log) for q in p.states if before.get(q)]
        if not moved or len({c > 0 for c, _ in moved}) != 1:
            return
        change = sorted(c for c, _ in moved)[len(moved) // 2]
        scale = 1.0 if p.log else max(abs(p.level[0]), 1e-12)
        if min(z for _, z in moved) >= DRIFT_Z and abs(change) / scale >= DRIFT_MIN:
            assert self.paired is not None  # drift is said of paired rounds
            text = self.paired.drift_words(change, p.log, since)
            self.d.drifts.append(text)
            self.lab.handler.note(text)

    def separate(self) -> tuple[list[float], list[float]]:
        """Both ends' samples, taken until they separate (Pinpoint's adaptive attempts) and checked
        to differ in the direction of the hunt; they are the references of the verdicts that follow."""
        lab, judge = self.lab, self.judge
        assert judge is not None  # the ends a window search rests on
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
            if judge.ends(good, bad, want >= lab.max_repeats, lab.higher_is_better, lab.find_fix, self.d.where(),
                          lab.min_change):
                return good, bad
            want = min(2 * want, lab.max_repeats)

    def round(self, want: int, *pairs: Pair) -> dict[Pair, Taken]:
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
        for pair, t in zip(extra, got[len(short):], strict=True):
            self.record_ahead(pair, t.evidence, t.builds, t.runs, "measured ahead in the ends' round, not judged yet",
                              t.samples)
        return dict(zip(short, got[:len(short)], strict=True))

    def record_ahead(self, pair: Pair, ev: Evidence, builds: int, runs: int, why: str, sampled: int = 0) -> None:
        """The row of a state measured ahead of the search: its verdict row follows when the search
        judges it; one that failed is untestable now (the search never probes it)."""
        if not ev.ok:
            c = rules.failed(ev)
            self.d.record(Probe("probe", pair, c.verdict, c.reason, builds=builds, runs=runs, run_samples=sampled))
        else:
            self.d.record(Probe("ahead", pair, rules.ahead(ev), why, list(ev.samples), builds=builds, runs=runs,
                                run_samples=sampled))

    def samples(self, pair: Pair, side: Verdict, want: int, got: "Taken | None" = None) -> tuple[list[float], int, int]:
        """The end's samples, measuring more (rows of their own, origin ``bisect``) until it has
        ``want``; ``got``: that measurement, taken already in a round with the other end."""
        stored = [e for e in self.lab.stored(pair) if e.ok and not (got and e.id == got.evidence.id)]
        samples = [x for e in stored for x in e.samples]
        origins = [e.origin for e in stored for _ in e.samples]
        builds = runs = 0
        if len(samples) < want:
            t = got or self.lab.measure_many([(pair, want - len(samples))])[0]
            ev, builds, runs, sampled = t.evidence, t.builds, t.runs, t.samples
            new = list(ev.samples) if ev.ok else []
            samples += new
            origins += [ev.origin] * len(new)
            self.d.record(Probe("end", pair, rules.end_verdict(side, samples),
                                f"{plural(len(samples), 'sample')} of the {side.value} end ({_from(origins)})",
                                list(ev.samples), builds=builds, runs=runs, run_samples=sampled))
        self.d.end_samples[side.value] = EndSamples(len(samples), dict(sorted(Counter(origins).items())))
        return samples, builds, runs

    def grow(self, good: list[float], bad: list[float], want: int) -> None:
        """The ends' samples as many as a probe's: their locations are as uncertain (runs, no builds)."""
        for ref, pair, side in ((good, self.d.ends[0], Verdict.GOOD), (bad, self.d.ends[1], Verdict.BAD)):
            if len(ref) < want:
                ref[:] = self.samples(pair, side, want)[0]

    def evaluate_paired(self, pair: Pair, role: str, low: Pair, high: Pair, context: "StepSession") -> Probe:
        """A state (a mixed pair of the blame) judged between the step's two states ``low`` and
        ``high``, all three measured in rounds (paired): its level, more rounds while unsure."""
        lab, judge = self.lab, self.paired
        assert judge is not None  # the blame's rounds are the paired judge's
        failed = lab.known_failed(pair)
        if failed:
            c = judge.untestable(failed)
            return Probe(role, pair, c.verdict, c.reason)
        blocks: list[dict[Pair, float | None]] = []
        builds = runs = sampled = 0
        want = MIN_ROUNDS
        search = context.search
        # each process by the statistic the search holds (chosen on the window's ends), as its probes were
        chosen = search.paired_verdicts.choice
        stat = chosen.statistic if chosen.candidates > 1 else None
        while True:
            new, taken = measure_rounds(lab, [low, pair, high], want - len(blocks), self.d.round_no, stop_on=pair,
                                        what=role, earlier=blocks, statistic=stat, bid=self.d.bid)
            if stat is not None:
                new = [{q: v.by(stat) if isinstance(v, ProcessValue) else v for q, v in bl.items()} for bl in new]
            self.d.round_no += len(new)
            blocks += new
            builds += sum(t.builds for _, t in taken)
            runs += sum(t.runs for _, t in taken)
            sampled += sum(t.samples for _, t in taken)
            bad = next((t.evidence for q, t in taken if q == pair and not t.evidence.ok), None)
            if bad is not None:
                c = rules.failed(bad)
                return Probe(role, pair, c.verdict, c.reason, builds=builds, runs=runs, run_samples=sampled)
            p = Paired.of(blocks, [low, pair, high])
            final = len(blocks) >= lab.max_repeats
            if p.rounds:
                groups = [(g, d) for lg, g, d in search.groups if lg == p.log] + [p.noise_groups()]
                sigma, dof = judge.noise([g for g in groups if g[0]], p.log, p.level[0])
                delta = search.paired_verdicts.delta(sigma, p.log)
                j = judge.level_paired(p, low, pair, high, sigma, dof, delta, final)
                if j.level is not Level.UNSURE:
                    v = rules.verdict_of(j.level)
                    return Probe(role, pair, v, j.reason + search.paired_verdicts.by(), p.raw(pair), builds=builds,
                                 runs=runs, between=j.level is Level.NEITHER, run_samples=sampled)
            elif final:
                return Probe(role, pair, Verdict.SKIP, "the step's states did not run in its rounds", builds=builds, runs=runs,
                             run_samples=sampled)
            want = len(blocks) + max(1, more_rounds(len(blocks), lab.max_repeats))

    def evaluate(self, pair: Pair, role: str, refs: tuple[list[float], list[float]]) -> Probe:
        """A state judged between ``refs`` (the step's two levels): from stored measurements when they
        decide, else measured (more repeats while unsure, the ends as many, up to --max-repeats)."""
        lab, judge = self.lab, self.judge
        assert judge is not None  # the blame's verdicts are the window's judge's
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
            c = rules.failed(next(e for e in stored if not e.ok))
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
            t = lab.measure_many([(pair, need)])[0]
            ev, builds, runs, sampled = t.evidence, builds + t.builds, runs + t.runs, sampled + t.samples
            if not ev.ok:
                c = rules.failed(ev)
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

    def __init__(self, d: "WindowState", judge: MetricJudge, paired: PairedJudge | None):
        self.d, self.lab = d, d.lab
        #: the window's judge, and the same judge when its verdicts are paired (None: they are not);
        #: both from the one place that takes a judge as a window search's (hourly.analysis.judges)
        self.judge, self.paired = judge, paired
        self.ends = MetricEnds(d, judge, paired)

    def run(self) -> tuple[Bounds, bool, bool]:
        """The ends (unless this is the rest of a window whose search goes on: it knows a step is
        left), the earliest regression, its confirmation; the bounds on the window's states, whether
        the window holds more after it, and whether it was confirmed."""
        d, lab = self.d, self.lab
        going: Going | None = lab.going
        if going is not None and [st.pair for st in going.states[going.offset:]] != [st.pair for st in d.states]:
            going = lab.going = None
        if going is None:
            if self.paired is not None:
                # one process at a time, states run alternately (a lab may say it does not ride)
                rider = first_probe(lab, d.states, self.judge, self.paired, d.rows) \
                    if lab.interleaves and lab.workers == 1 and getattr(lab, "rides", True) else None
                differ, p = self.ends.separate_paired(rider)
                keyed = replace(p, states=(0, len(d.states) - 1)) if p is not None else None  # by the search's indices
                session, parent, off = StepSession(lab, d.states, self.judge, self.paired, d.rows,
                                                     ends=(differ, keyed)), d.states, 0
                pool_decided(lab, d.bid, session.pairs, session.search.paired_verdicts, self.ends.rode_decided)
                if rider is not None:
                    i = [st.pair for st in d.states].index(rider)
                    if self.ends.riding:
                        session.riding[(d.ends[0], rider, d.ends[1])] = list(self.ends.riding)
                        # its processes come to the search through those rounds, not as stored samples too
                        session.search.samples.pop(i, None)
                    for t in self.ends.rider_taken:
                        session.owe(i, t.builds, t.runs, t.samples)
            else:
                self.ends.plan()
                self.ends.separate()
                session, parent, off = StepSession(lab, d.states, self.judge, self.paired), d.states, 0
        else:
            session, parent, off = going.session, going.states, going.offset
        self.session = session
        drifts = len(session.search.drifts)
        try:
            step = session.next_regression(d)
        finally:
            d.drifts += session.search.drifts[drifts:]
            self.windows(session, off)
        b = Bounds(step.lo - off, step.hi - off)
        self.range_window(session, step)
        self.windows(session, off)
        more_after = session.search.more_after
        lab.going = Going(session, parent, step.hi)
        last_good, first_bad = d.states[b.lo].pair, d.states[b.hi].pair
        confirmed = session.confirmation(d, last_good, first_bad, step)
        session.flush(d)
        # blame compares the mixed pairs with the step's two levels
        self.refs = (session.search.ref(step.lo), session.search.ref(step.hi))
        self.step_pairs = (last_good, first_bad)
        d.ends = (last_good, first_bad)
        if self.paired is not None:
            d.measured = f"{APART} ({lab.apart})" if lab.apart else "interleaved"
        else:
            d.measured = f"not paired: drift not cancelled ({lab.apart or 'the verdicts are not paired'})"
        return b, more_after, confirmed

    def windows(self, session: "StepSession", off: int) -> None:
        """The crash windows the search found inside this window, for the answer."""
        d = self.d
        for w in session.search.windows:
            if w.first - off < 0 or w.last - off >= len(d.states):
                continue
            if any(c.get("first_index") == w.first - off for c in d.crash_windows):
                continue
            d.crash_windows.append(self.lab_window(w, off))

    def range_window(self, session: "StepSession", step: Step) -> None:
        """A step whose last good and first bad states only crashing states separate (probed one by
        one, or left between two crashes): those states as a crash window of the answer, when no
        window the search found holds them."""
        from hourly.analysis.crash_window import CrashWindow
        search = session.search
        crashed = [i for i in range(step.lo + 1, step.hi) if i in search.crashed]
        if not crashed or any(w.first <= crashed[0] and crashed[-1] <= w.last for w in search.windows):
            return
        first, last = crashed[0], crashed[-1]
        w = CrashWindow(first, last, step.lo if first == step.lo + 1 else None, step.hi if last == step.hi - 1 else None)
        search.windows.append(w)

    def lab_window(self, w: CrashWindow, off: int) -> dict:
        """A crash window as the answer keeps it: its first and last crashing states' commits, the
        crash's last line, the states known to run on each side, and the --cherry-pick of the commit
        that ends it (when its end was found exactly)."""
        d, lab = self.d, self.lab
        states = d.states
        first, last = w.first - off, w.last - off

        def brought(i: int) -> dict | None:
            if i <= 0:
                return None
            moved = lab.moved(states[i - 1].pair, states[i].pair)
            repo = next((n for n in ("jax", "xla") if moved.get(n)), None)
            return {"repo": repo, "sha": moved[repo][-1]} if repo else None

        fix = brought(w.after - off) if w.exact_end and w.after is not None and w.after - off < len(states) else None
        return {"first_index": first, "last_index": last, "states": w.states,
                "first": {"xla": states[first].pair.xla, "jax": states[first].pair.jax, "commit": brought(first)},
                "last": {"xla": states[last].pair.xla, "jax": states[last].pair.jax, "commit": brought(last)},
                "before": None if w.before is None else {"xla": states[w.before - off].pair.xla,
                                                         "jax": states[w.before - off].pair.jax},
                "after": None if w.after is None or w.after - off >= len(states) else {
                    "xla": states[w.after - off].pair.xla, "jax": states[w.after - off].pair.jax},
                "last_line": lab.crash_line(states[first].pair) or lab.crash_line(states[last].pair),
                "cherry_pick": f"--cherry-pick {fix['repo']}@{fix['sha']}" if fix else None,
                "edge_probes": w.probes}

    def evaluate(self, pair: Pair, role: str) -> Probe:
        if self.paired is not None:
            return self.ends.evaluate_paired(pair, role, *self.step_pairs, self.session)
        return self.ends.evaluate(pair, role, self.refs)

