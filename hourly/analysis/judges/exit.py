"""``--mode exit``: a state is good or bad by its exit status, as ``git bisect run`` decides: 0 is
good, 125 skips, anything else (a time-out too) is bad (:class:`ExitJudge`).

``--flaky`` (and exit mode once a state both passes and fails): a state is good or bad by its
failure rate over repeated runs, Wald's sequential test between the two ends' rates
(:class:`FlakyJudge`). The two rules of exit mode live in one module: exit mode turns to the
second on its own."""

from __future__ import annotations

import math
from typing import Sequence

from hourly.analysis.judges.base import DEFAULT_OPTIONS, Call, Evidence, JudgeOptions, Run, Verdict
from hourly.analysis.judges.runs import RunsJudge
from hourly.analysis.samples import odds
from hourly.errors import UserError
from hourly.model import Status
from hourly.text.plurals import plural


class ExitJudge(RunsJudge):
    name = "exit"
    mode = answer_mode = "exit"

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        super().__init__(opts)
        #: the failure-rate test exit mode turned to (a state both passed and failed), for good
        self.turned_flaky: FlakyJudge | None = None

    def rate(self, seen: Sequence[int | None] | None = None) -> FlakyJudge | None:
        """One run decides until a state both passes and fails (runs ``seen``): then its failure rate
        does, by :class:`FlakyJudge`, for the rest of the bisection."""
        if self.turned_flaky is None and seen is not None and self.both(seen):
            self.turned_flaky = FlakyJudge(self.opts)
        return self.turned_flaky

    def runs(self, runs: list[Run]) -> Call:
        rcs = [r.returncode for r in runs]
        return Call(self.turned(self.exit_verdict(rcs)), f"exit codes {rcs}")

    @staticmethod
    def exit_verdict(returncodes: Sequence[int | None], timed_out: bool = False) -> Verdict:
        """``git bisect run``'s rule over one or more runs: any failing run is bad, 125 skips, 0 is good.

        A run that timed out (``None``) counts as bad: a hang is a failure of the program.
        """
        if not returncodes:
            return Verdict.SKIP
        if any(rc is None for rc in returncodes) or timed_out:
            return Verdict.BAD
        if any(rc not in (0, 125) for rc in returncodes):
            return Verdict.BAD
        if any(rc == 125 for rc in returncodes):
            return Verdict.SKIP
        return Verdict.GOOD

    def of_point(self, ev: Evidence) -> Verdict:
        """A scan point's verdict (the crash windows of a stored scan): untestable when its build failed."""
        if ev.status == Status.BUILD_FAILED.value:
            return Verdict.SKIP
        return self.turned(self.exit_verdict(ev.returncodes))

    @staticmethod
    def both(returncodes: Sequence[int | None]) -> bool:
        """The runs both passed and failed (125 aside): one run decides nothing, the failure rate does
        (exit mode then judges by :class:`FlakyJudge`)."""
        counted = [rc for rc in returncodes if rc != 125]
        k = sum(rc != 0 for rc in counted)
        return 0 < k < len(counted)

    def check_end(self, pair_text: str, got: Verdict, want: Verdict, find_fix: bool) -> UserError | None:
        """An end that is not what the window says it is (None: it is)."""
        return _check_end(pair_text, got, want, find_fix, "by exit status")


def _check_end(pair_text: str, got: Verdict, want: Verdict, find_fix: bool, by: str) -> UserError | None:
    if got is want:
        return None
    if find_fix:
        said = {"good": "bad (still failing)", "bad": "good (fixed)"}[want.value]
        return UserError(f"the {said} end {pair_text} is not, {by}",
                         "pass --bad at a state that fails and a later --good at one that passes")
    return UserError(f"the {want.value} end {pair_text} is {got.value} {by}",
                     "pass --good at a state that passes and --bad at one that fails")


#: Wald's error rates of each verdict on a state's failure rate, the rate a clean good end is taken
#: to have at most, and the highest a bad end is taken to have.
FLAKY_ALPHA = 0.01
FLAKY_FLOOR = 0.02
FLAKY_CEIL = 0.98
#: Runs of each end before a flaky bisection compares states with their failure rates.
FLAKY_END_RUNS = 10


class FlakyJudge(ExitJudge):
    """Probes by failure rate, more runs (doubling, up to ``max_repeats``) while unsure; the ends'
    own rows by the exit status. ``rates``: the clean end's and the crashing end's failure rates."""

    name = "flaky"
    mode = answer_mode = "exit"

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        super().__init__(opts)
        self.repeats, self.max_repeats = opts.repeats, opts.max_repeats
        self.rates: tuple[float, float] | None = None

    def against(self, clean: Sequence[int | None], crashing: Sequence[int | None]) -> None:
        """The ends' runs (their exit codes) the states' failure rates are tested between."""
        self.rates = self.failure_rates(clean, crashing)

    def runs(self, runs: list[Run]) -> Call:
        assert self.rates is not None  # against() before the first probe
        p0, p1 = self.rates
        rcs = [r.returncode for r in runs]
        why = "no run yet"
        if rcs:
            c = self.flaky_verdict(rcs, p0, p1)
            if c.verdict is not Verdict.UNSURE:
                return Call(self.turned(c.verdict), c.reason)
            if self.failures(rcs)[1] >= self.max_repeats or len(rcs) >= self.max_repeats:
                return Call(Verdict.SKIP, f"unsure after {plural(len(rcs), 'sample')}: {c.reason}")
            why = c.reason
        return Call(Verdict.UNSURE, why, more=min(max(len(rcs), self.repeats, 1), self.max_repeats - len(rcs)))

    def end_runs(self, runs: list[Run]) -> Call:
        """An end's own row: by its exit status, as in exit mode."""
        return ExitJudge.runs(self, runs)

    def rate(self, seen: Sequence[int | None] | None = None) -> FlakyJudge:
        """Its own failure-rate test, from the start."""
        return self

    # -- the ends ---------------------------------------------------------------------------------
    def end_wants(self, returncodes: Sequence[int | None], clean: bool) -> int:
        """More runs an end needs: FLAKY_END_RUNS each, the crashing one more (doubling, up to
        ``max_repeats``) until it has failed once; 0 when it has enough."""
        want = min(FLAKY_END_RUNS, self.max_repeats)
        k, _ = self.failures(returncodes)
        short = want - len(returncodes)
        if short <= 0 and (clean or k or len(returncodes) >= self.max_repeats):
            return 0
        return short if short > 0 else min(len(returncodes), self.max_repeats - len(returncodes))

    def check_ends(self, clean: Sequence[int | None], crashing: Sequence[int | None], crashing_text: str) -> None:
        """The crashing end must fail more often than the clean one."""
        kc, nc = self.failures(clean)
        kb, nb = self.failures(crashing)
        if not nb or kb / nb <= (kc / nc if nc else 0.0):
            raise UserError(f"the failing end {crashing_text} fails in {kb} of {nb} runs, the other in {kc} of {nc}",
                            "pass ends on either side of the change in failure rate, or a larger --max-repeats")

    # -- the rules ------------------------------------------------------------------------------
    @staticmethod
    def failures(returncodes: Sequence[int | None]) -> tuple[int, int]:
        """(failed runs, runs that count) by ``git bisect run``'s rule: 125 does not count, a time-out
        (None) and any other non-zero code fail."""
        counted = [rc for rc in returncodes if rc != 125]
        return sum(rc != 0 for rc in counted), len(counted)

    @staticmethod
    def rate_of(returncodes: Sequence[int | None]) -> dict:
        """A state's failure rate as answers give it."""
        k, n = FlakyJudge.failures(returncodes)
        return {"failed": k, "runs": n, "rate": round(k / n, 4) if n else None}

    @staticmethod
    def failure_rates(good: Sequence[int | None], bad: Sequence[int | None]) -> tuple[float, float]:
        """The two failure rates a flaky state is tested between: the good end's (at least FLAKY_FLOOR)
        and the bad end's (at most FLAKY_CEIL, at least twice the good end's)."""
        kg, ng = FlakyJudge.failures(good)
        kb, nb = FlakyJudge.failures(bad)
        p0 = max(kg / ng if ng else 0.0, FLAKY_FLOOR)
        p1 = min(max(kb / nb if nb else 1.0, 2 * p0), FLAKY_CEIL)
        return p0, p1

    @staticmethod
    def flaky_verdict(returncodes: Sequence[int | None], p_good: float, p_bad: float,
                      alpha: float = FLAKY_ALPHA) -> Call:
        """GOOD, BAD or UNSURE for a state whose runs fail now and then: Wald's sequential test of its
        failure rate, ``p_good`` (the good end's) against ``p_bad`` (the bad end's). Each failure adds
        log(p_bad/p_good), each clean run log((1-p_bad)/(1-p_good)); a state crashing in 30 % of runs
        is bad against one that never crashes after a few runs, and one clean run decides nothing."""
        k, n = FlakyJudge.failures(returncodes)
        if not n:
            return Call(Verdict.SKIP, "every run exited 125")
        llr = k * math.log(p_bad / p_good) + (n - k) * math.log((1 - p_bad) / (1 - p_good))
        upper, lower = math.log((1 - alpha) / alpha), math.log(alpha / (1 - alpha))
        what = f"{k} of {n} runs failed ({k / n:.0%}; ends {p_good:.0%} and {p_bad:.0%})"
        if llr >= upper:
            return Call(Verdict.BAD, f"bad: {what}, odds {odds(llr)}", llr=llr)
        if llr <= lower:
            return Call(Verdict.GOOD, f"good: {what}, odds {odds(llr)}", llr=llr)
        return Call(Verdict.UNSURE, f"unsure: {what}", llr=llr)


#: a state's failure rate as answers give it
rate_of = FlakyJudge.rate_of
