"""What the judges that read runs (exit status, printed metric, failure rate) share: a state whose
build failed is untestable, a state with no run is measured, and finding a fix turns verdicts round."""

from __future__ import annotations

from typing import Sequence

from hourly.analysis.judges.base import DEFAULT_OPTIONS, BaseJudge, Call, Evidence, JudgeOptions, Run, Verdict, flip
from hourly.analysis.judges.chain import ChainTraits, RateTest
from hourly.errors import UserError
from hourly.model import Status

#: a measurement that ran nothing: the state is untestable
UNRUN = (Status.BUILD_FAILED.value, Status.UNTESTABLE.value)


class RunsJudge(BaseJudge):
    """The verdict-by-verdict judges (exit, printed, flaky). ``invert``: finding a fix, good and
    bad are turned round (the changed state is "bad", as git bisect's terms)."""

    name = "runs"
    mode = "exit"
    steps = False
    #: the search walks the mixed state inside a step that moves both repositories
    mixed_states = True
    #: the two states an answer rests on are measured again
    confirms = True
    #: the chain search's policy: the later middle on ties (the peer's ``len // 2``), and a state that
    #: shares a commit with one that failed to build costs a little more (benchmarks/peer_builds.py)
    later_on_ties = True
    near_breaks = True

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        self.invert = opts.invert
        self.opts = opts

    @property
    def traits(self) -> ChainTraits:
        return ChainTraits(self.mode, self.answer_mode, self.invert, self.mixed_states, self.near_breaks,
                           self.later_on_ties, self.confirms)

    def end_runs(self, runs: list[Run]) -> Call:
        """An end's own row (the flaky judge: by its exit status)."""
        return self.runs(runs)

    def by_runs(self, runs: list[Run], role: str) -> Call:
        """A state's verdict by its runs in hand; an end's own row by :meth:`end_runs`."""
        return self.end_runs(runs) if role == "end" else self.runs(runs)

    def rate(self, seen: Sequence[int | None] | None = None) -> RateTest | None:
        """One run decides (the flaky judge and exit mode turned flaky test failure rates)."""
        return None

    def turned(self, v: Verdict) -> Verdict:
        return flip(v) if self.invert else v

    @staticmethod
    def ran(ev: Evidence) -> bool:
        """Whether a measurement ran the benchmark at all (its build failed, or --only's jaxlib is too old)."""
        return ran(ev)

    def call(self, ev: Evidence) -> Call:
        """The verdict on one measurement just taken: untestable when it ran nothing."""
        if not self.ran(ev):
            return Call(Verdict.SKIP, ev.detail or "build failed")
        return self.runs(list(ev.runs))

    @staticmethod
    def unbuilt(evs: Sequence[Evidence]) -> Call | None:
        """Untestable when a measurement in hand failed to build (None: judge its runs)."""
        return unbuilt(evs)

    def runs(self, runs: list[Run]) -> Call:
        raise NotImplementedError

    def check_end(self, pair_text: str, got: Verdict, want: Verdict, find_fix: bool) -> UserError | None:
        """An end that is not what the window says it is (None: it is)."""
        raise NotImplementedError


def ran(ev: Evidence) -> bool:
    """Whether a measurement ran the benchmark at all (its build failed, or --only's jaxlib is too old)."""
    return ev.status not in UNRUN


def unbuilt(evs: Sequence[Evidence]) -> Call | None:
    """Untestable when a measurement in hand failed to build (None: judge its runs)."""
    if any(e.status == Status.BUILD_FAILED.value for e in evs):
        return Call(Verdict.SKIP, "build failed")
    return None
