"""``--mode exit``: a state is good or bad by its exit status, as ``git bisect run`` decides: 0 is
good, 125 skips, anything else (a time-out too) is bad."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from hourly.analysis.judges.base import DEFAULT_OPTIONS, Call, Evidence, JudgeOptions, Run, Verdict
from hourly.analysis.judges.runs import RunsJudge
from hourly.errors import UserError
from hourly.model import Status

if TYPE_CHECKING:
    from hourly.analysis.judges.flaky import FlakyJudge


class ExitJudge(RunsJudge):
    name = "exit"
    mode = answer_mode = "exit"

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        super().__init__(opts)
        #: the failure-rate test exit mode turned to (a state both passed and failed), for good
        self.turned_flaky: FlakyJudge | None = None

    def rate(self, seen: Sequence[int | None] | None = None) -> FlakyJudge | None:
        """One run decides until a state both passes and fails (runs ``seen``): then its failure rate
        does, by :class:`~hourly.analysis.judges.flaky.FlakyJudge`, for the rest of the bisection."""
        if self.turned_flaky is None and seen is not None and self.both(seen):
            from hourly.analysis.judges.flaky import FlakyJudge
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
        (exit mode then judges by :class:`~hourly.analysis.judges.flaky.FlakyJudge`)."""
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
