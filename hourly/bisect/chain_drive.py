"""One verdict at a time, as ``git bisect`` goes: the exit status, whether the metric was printed, a
state's failure rate (``--flaky``, or exit mode once a state both passes and fails), or a person's
word (``--manual``). The ends are judged (a person's are taken as given), the chain of states is
probed until the last good and first bad are settled (a step that moves both repositories holds
its mixed state old xla + new jax, which the blame step then reuses), and the two states the
answer rests on are measured again. Every verdict is the window's judge's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.analysis.bisection import (
    COST_NEAR_BREAK,
    Bounds,
    bounds,
    near_breaks,
    next_probe,
    plan_probes,
    timeline_bounds,
    with_mixed_states,
)
from hourly.analysis.judges import ChainJudge, Evidence, RateTest, Run, Verdict
from hourly.analysis.judges.exit import rate_of
from hourly.analysis.judges.manual import given
from hourly.analysis.judges.metric import MIN_END_SAMPLES
from hourly.analysis.judges.runs import ran, unbuilt
from hourly.answers import Answer, ManualNote, Rate
from hourly.bisect.records import Probe, Taken, Where
from hourly.model import Pair, Status

if TYPE_CHECKING:
    from hourly.bisect.lab import WindowState


class ChainDrive:
    """The verdict-by-verdict part of one window (:meth:`hourly.bisect.drive.WindowDrive.run`),
    every verdict its ``judge``'s (only what :class:`~hourly.analysis.judges.ChainJudge` declares)."""

    def __init__(self, d: "WindowState", judge: ChainJudge):
        self.d, self.lab, self.judge = d, d.lab, judge

    def run(self) -> tuple[Bounds, dict[Pair, Verdict], bool]:
        """Ends, search, confirmation: the bounds on the window's states, every verdict of the chain
        (the blame step reuses them), and whether fresh verdicts confirmed the two states."""
        self.ends()
        b, known = self.search()
        confirmed = self.confirmation(self.d.states[b.lo].pair, self.d.states[b.hi].pair)
        return b, known, confirmed

    # -- the ends ---------------------------------------------------------------------------------
    def ends(self) -> None:
        """Both ends judged (stored verdicts reused): the good end passes, the bad fails. Flaky
        (--flaky, or an exit-mode end that both passes and fails): by their failure rates. A manual
        bisection takes them as given (measured only for the benchmark's offered verdicts)."""
        d, lab, j = self.d, self.lab, self.judge
        if j.traits.person:
            return self.given_ends()
        rate = j.rate(self.rcs(d.ends[0])) or j.rate(self.rcs(d.ends[1]))
        if rate is not None:
            return self.flaky_ends(rate)
        invert = j.traits.invert
        for pair, want in ((d.ends[0], Verdict.GOOD), (d.ends[1], Verdict.BAD)):
            p = d.stored.get(("end", pair))
            v = Verdict(p["verdict"]) if p else d.record(self.evaluate(pair, "end")).verdict
            wrong = j.check_end(pair.short(), v, want, invert)
            if wrong is not None:
                side = {"good": "bad", "bad": "good"}[want.value] if invert else want.value
                raise lab.unbuilt_end(pair, side) or wrong

    def given_ends(self) -> None:
        d, j = self.d, self.judge
        if j.traits.measures_ends:
            # the benchmark's verdict on each probe is offered against the ends' samples: measured
            # (or read from the store) as a measured bisection's are; the ends are still not judged
            from hourly.bisect.metric_drive import MetricEnds
            ends = MetricEnds(d)
            want = max(self.lab.repeats, MIN_END_SAMPLES)
            for pair, v in ((d.ends[0], Verdict.GOOD), (d.ends[1], Verdict.BAD)):
                ends.samples(pair, v, want)
            return
        for pair, v in ((d.ends[0], Verdict.GOOD), (d.ends[1], Verdict.BAD)):
            if ("end", pair) not in d.stored:
                c = j.given_end(v, d.w.origin)
                d.record(Probe("end", pair, c.verdict, c.reason))

    def flaky_ends(self, j: RateTest) -> None:
        """Flaky: each end measured as the judge wants (the crashing one until it has failed once);
        the crashing end must fail more often than the clean one."""
        d, lab = self.d, self.lab
        good, bad = d.ends
        clean, crashing = (bad, good) if self.judge.traits.invert else (good, bad)
        for pair in (clean, crashing):
            while True:
                more = j.end_wants(self.rcs(pair), clean=pair == clean)
                if not more:
                    break
                d.record(self.judged("end", pair, lab.measure_many([(pair, more)])[0]))
        j.check_ends(self.rcs(clean), self.rcs(crashing), crashing.short())
        j.against(self.rcs(clean), self.rcs(crashing))

    def rcs(self, pair: Pair) -> list[int | None]:
        """The exit codes of a state's stored runs that count."""
        return [rc for e in self.lab.stored(pair) for rc in e.counted]

    # -- the search -------------------------------------------------------------------------------
    def search(self) -> tuple[Bounds, dict[Pair, Verdict]]:
        """Probes until the last good and first bad state are settled, over the chain of
        :func:`~hourly.analysis.bisection.with_mixed_states` when the judge and the pairing walk it;
        stored probe verdicts are reused. With workers, k states a round splitting the span into
        equal parts. Returns the bounds on the window's states and every verdict of the chain."""
        d, lab = self.d, self.lab
        states = d.states
        j, traits = self.judge, self.judge.traits
        chain = with_mixed_states(states) if traits.mixed_states and lab.mixed_states else list(states)
        pairs = [st.pair for st in chain]
        index = {p: i for i, p in enumerate(pairs)}
        verdicts = {index[Pair(r["xla"], r["jax"])]: j.steer(Verdict(r["verdict"])) for r in d.rows
                    if r["role"] == "probe" and Pair(r["xla"], r["jax"]) in index}
        first = self.resumed_at(index, verdicts)
        while True:
            b = bounds(len(pairs), verdicts)
            near = near_breaks(pairs, [pairs[i] for i, v in verdicts.items() if v is Verdict.SKIP],
                               [pairs[i] for i, v in verdicts.items() if v in (Verdict.GOOD, Verdict.BAD)]
                               + [pairs[0], pairs[-1]]) if traits.near_breaks else set()
            costs = {i: lab.cost(pairs[i]) + (COST_NEAR_BREAK if i in near else 0.0)
                     for i in range(b.lo + 1, b.hi) if i not in verdicts}
            if lab.workers > 1:
                plan = plan_probes(len(pairs), verdicts, lab.workers, costs)
                if not plan:
                    break
                for i, p in zip(plan, self.evaluate_many([pairs[i] for i in plan], "probe"), strict=True):
                    verdicts[i] = j.steer(d.record(p).verdict)
                continue
            nxt = first if first is not None else next_probe(len(pairs), verdicts, costs,
                                                             later_on_ties=traits.later_on_ties,
                                                             jump_runs=self.jump_runs())
            if nxt is None:
                break
            where = Where(nxt, len(states), b.lo, b.hi, costs, resumed=first is not None)
            first = None
            verdicts[nxt] = j.steer(d.record(self.evaluate(pairs[nxt], "probe", where=where)).verdict)
        known = {pairs[i]: v for i, v in verdicts.items()}
        return timeline_bounds(chain, states, bounds(len(pairs), verdicts)), known

    def jump_runs(self) -> bool:
        """A run of untestable states is jumped, its edges found (``next_probe(..., jump_runs=True)``),
        where the judge's search minds build breaks, unless ``--walk-skips`` asks for every state."""
        return self.judge.traits.near_breaks and not getattr(self.lab, "walk_skips", False)

    def resumed_at(self, index: dict[Pair, int], verdicts: dict[int, Verdict]) -> int | None:
        """The probe a stopped bisection waited at (a person's), whatever the costs say now."""
        w = self.lab.witness
        pair = w.resume_at(self.d.bid) if w is not None else None
        i = index.get(pair) if pair is not None else None
        b = bounds(len(index), verdicts)
        return i if i is not None and i not in verdicts and b.lo < i < b.hi else None

    # -- one state --------------------------------------------------------------------------------
    def evaluate(self, pair: Pair, role: str, fresh: bool = False, where: Where | None = None) -> Probe:
        """The verdict on one state: from stored measurements when they decide, else measured (a
        flaky state: more runs while unsure, up to --max-repeats); a person's word, asked for."""
        lab, j = self.lab, self.judge
        failed = lab.known_failed(pair)
        if failed:  # known untestable before it is tried
            c = j.call(Evidence(Status.UNTESTABLE.value, detail=failed))
            return Probe(role, pair, c.verdict, c.reason)
        if lab.witness is not None:
            t = lab.witness.ask(lab, self.d.bid, pair, role, where, self.d.ends)
            ev = t.evidence
            c = j.call(ev)
            return Probe(role, pair, c.verdict, c.reason, list(ev.samples), ev.counted, builds=t.builds, runs=t.runs,
                         run_samples=t.samples)
        stored = [] if fresh else lab.stored(pair)
        none = unbuilt(stored)
        if none is not None:
            return Probe(role, pair, none.verdict, none.reason)
        runs_ = [r for e in stored for r in e.runs]
        rate = j.rate([r.returncode for r in runs_]) if role != "end" else None
        if rate is not None:
            return self.flaky(rate, role, pair, runs_)
        if not runs_:
            return self.judged(role, pair, lab.measure_many([(pair, lab.repeats)])[0])
        return self.judged_runs(role, pair, runs_)

    def judged(self, role: str, pair: Pair, t: Taken) -> Probe:
        """The verdict on a state just measured."""
        ev, builds, runs, sampled = t.evidence, t.builds, t.runs, t.samples
        if not ran(ev):
            c = self.judge.call(ev)
            return Probe(role, pair, c.verdict, c.reason, builds=builds, runs=runs, run_samples=sampled)
        return self.judged_runs(role, pair, list(ev.runs), builds, runs, sampled)

    def judged_runs(self, role: str, pair: Pair, runs_: list[Run], builds: int = 0, runs: int = 0,
                    sampled: int = 0) -> Probe:
        """The verdict on a state by its runs (by failure rate when flaky, an end aside)."""
        rate = self.judge.rate() if role != "end" else None
        if rate is not None:
            return self.flaky(rate, role, pair, runs_, builds, runs, sampled)
        c = self.judge.by_runs(runs_, role)
        return Probe(role, pair, c.verdict, c.reason, returncodes=[r.returncode for r in runs_], builds=builds, runs=runs,
                     run_samples=sampled)

    def flaky(self, j: RateTest, role: str, pair: Pair, runs_: list[Run], builds: int = 0, runs: int = 0,
              sampled: int = 0) -> Probe:
        """More runs (doubling, up to --max-repeats) until the state's failure rate is told apart
        from one end's; still unsure then: untestable."""
        if j.rates is None:
            good, bad = self.d.ends
            clean, crashing = (bad, good) if self.judge.traits.invert else (good, bad)
            j.against(self.rcs(clean), self.rcs(crashing))
        while True:
            rcs = [r.returncode for r in runs_]
            c = j.runs(runs_)
            if c.decided:
                return Probe(role, pair, c.verdict, c.reason, returncodes=rcs, builds=builds, runs=runs,
                             run_samples=sampled)
            t = self.lab.measure_many([(pair, c.more)])[0]
            ev, builds, runs, sampled = t.evidence, builds + t.builds, runs + t.runs, sampled + t.samples
            if not ran(ev):
                failed = self.judge.call(ev)
                return Probe(role, pair, failed.verdict, failed.reason, returncodes=rcs, builds=builds, runs=runs,
                             run_samples=sampled)
            runs_ = runs_ + [x for x in ev.runs if not x.warmup]

    def evaluate_many(self, pairs: list[Pair], role: str) -> list[Probe]:
        """The verdicts on several states, those to measure measured in one round."""
        lab = self.lab
        if self.judge.rate() is not None:  # each state takes the runs its own sequential test needs
            return [self.evaluate(p, role) for p in pairs]
        todo = [p for p in pairs if not lab.known_failed(p) and not any(
            e.status == Status.BUILD_FAILED.value or e.runs for e in lab.stored(p))]
        got = dict(zip(todo, lab.measure_many([(p, lab.repeats) for p in todo]), strict=True)) if todo else {}
        return [self.judged(role, p, got[p]) if p in got else self.evaluate(p, role) for p in pairs]

    # -- confirmation and the answer -------------------------------------------------------------
    def confirmation(self, last_good: Pair, first_bad: Pair) -> bool:
        """Fresh verdicts on the two states the answer rests on (stored ones reused); a judge that
        confirms nothing (a person's verdicts are the evidence) takes the answer as it stands."""
        d, j = self.d, self.judge
        if not j.traits.confirms:
            return True
        confirm = {}
        for role, pair in (("confirm_good", last_good), ("confirm_bad", first_bad)):
            r = d.stored.get((role, pair))
            confirm[role] = Verdict(r["verdict"]) if r else d.record(self.evaluate(pair, role, fresh=True)).verdict
        return j.confirmed(confirm["confirm_good"], confirm["confirm_bad"])

    def extras(self, a: Answer, last_good: Pair, first_bad: Pair) -> None:
        """Exit mode: each end's failure rate (what a flaky answer rests on); a manual bisection: the
        person's part."""
        traits = self.judge.traits
        if traits.person:
            rows = self.lab.probes(self.d.bid)
            for row, p in zip(rows, a.probes, strict=True):
                p.manual, p.reason = given(row), row.get("reason")
            a.mode = traits.answer_mode
            a.manual = ManualNote(traits.window_mode, traits.bench, sum(1 for r in rows if given(r)),
                                  "measured for the benchmark's offered verdicts, not judged" if self.d.end_samples
                                  else "taken as given, not built or judged")
        elif traits.mode == "exit":
            a.flaky = self.judge.rate() is not None
            a.failure_rates = {name: Rate(**rate_of(self.rcs(p))) for name, p in
                               (("last_good", last_good), ("first_bad", first_bad))}
