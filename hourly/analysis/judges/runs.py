"""What the judges that read runs (exit status, printed metric, failure rate) share: a state whose
build failed is untestable, a state with no run is measured, and finding a fix turns verdicts round."""

from __future__ import annotations

from typing import Sequence

from hourly.analysis.judges.base import Call, Evidence, Run, Verdict, flip
from hourly.model import Status

#: a measurement that ran nothing: the state is untestable
UNRUN = (Status.BUILD_FAILED.value, Status.UNTESTABLE.value)


class RunsJudge:
    """The verdict-by-verdict judges (exit, printed, flaky). ``invert``: finding a fix, good and
    bad are turned round (the changed state is "bad", as git bisect's terms)."""

    name = "runs"
    mode = "exit"
    steps = False
    #: the search walks the mixed state inside a step that moves both repositories
    mixed_states = True
    #: the two states an answer rests on are measured again
    confirms = True

    def __init__(self, invert: bool = False):
        self.invert = invert

    @property
    def answer_mode(self) -> str:
        return self.mode

    def turned(self, v: Verdict) -> Verdict:
        return flip(v) if self.invert else v

    def steer(self, v: Verdict) -> Verdict:
        return v

    def confirmed(self, good: Verdict, bad: Verdict) -> bool:
        return good is Verdict.GOOD and bad is Verdict.BAD

    def call(self, ev: Evidence) -> Call:
        """The verdict on one measurement just taken: untestable when it ran nothing."""
        if ev.status in UNRUN:
            return Call(Verdict.SKIP, ev.detail or "build failed")
        return self.runs(list(ev.runs))

    def stored(self, evs: Sequence[Evidence]) -> Call | None:
        """The verdict from the measurements in hand (every run of them), or None: measure it."""
        if any(e.status == Status.BUILD_FAILED.value for e in evs):
            return Call(Verdict.SKIP, "build failed")
        runs = [r for e in evs for r in e.runs]
        return self.runs(runs) if runs else None

    def runs(self, runs: list[Run]) -> Call:
        raise NotImplementedError
