"""The face a chain of states sees of its judge (exit status, failure rate, printed metric, a
person's word): :class:`ChainJudge`, what hourly.bisect.chain_drive calls and nothing more.

A window is searched one of two ways (hourly.bisect.drive): one verdict at a time over the chain of
states, or the window search of every step between levels of a metric. Which one a judge is taken as
is decided in one place (hourly.analysis.judges: ``chain_judge``, ``window_judge``); the drives never
ask a judge what class it is (tests/test_layout.py counts the members and looks for such questions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from hourly.analysis.judges.base import Call, Evidence, Run, Verdict
from hourly.errors import UserError

__all__ = ["ChainJudge", "ChainTraits", "RateTest"]


@dataclass(frozen=True)
class ChainTraits:
    """What the chain search is told of its judge: the modes its rows and answers name; ``invert``:
    finding a fix (good and bad turned round); whether it walks the mixed state inside a step
    (``mixed_states``), minds build breaks (``near_breaks``: a little more cost beside a failed
    build, a run of untestable states jumped), takes the later middle on ties (``later_on_ties``)
    and measures the answer's two states again (``confirms``); ``person``: a person's word decides
    (the ends are taken as given; ``measures_ends``: measured for the benchmark's offered verdicts;
    ``window_mode``, ``bench``: what the person's window came from, whether a benchmark runs first)."""

    mode: str
    answer_mode: str
    invert: bool = False
    mixed_states: bool = True
    near_breaks: bool = True
    later_on_ties: bool = True
    confirms: bool = True
    person: bool = False
    measures_ends: bool = False
    window_mode: str = "metric"
    bench: bool = False


class RateTest(Protocol):
    """A state by its failure rate over repeated runs (the flaky judge): Wald's sequential test
    between the ends' rates."""

    #: the clean end's and the crashing end's failure rates (None: :meth:`against` not told yet)
    rates: tuple[float, float] | None

    def against(self, clean: Sequence[int | None], crashing: Sequence[int | None]) -> None:
        """The ends' exit codes the states' failure rates are tested between."""
        ...

    def end_wants(self, returncodes: Sequence[int | None], clean: bool) -> int:
        """More runs an end needs (0: enough)."""
        ...

    def check_ends(self, clean: Sequence[int | None], crashing: Sequence[int | None], crashing_text: str) -> None:
        """The crashing end must fail more often than the clean one (a UserError otherwise)."""
        ...

    def runs(self, runs: list[Run]) -> Call:
        """A state's verdict by its runs; unsure, with how many more runs may decide."""
        ...


class ChainJudge(Protocol):
    """How each state of a chain is called, one at a time (exit status, failure rate, printed
    metric, a person's word)."""

    @property
    def traits(self) -> ChainTraits:
        """What the chain search is told of the judge."""
        ...

    def call(self, ev: Evidence) -> Call:
        """The verdict on one measurement (a person's word; untestable when it ran nothing)."""
        ...

    def by_runs(self, runs: list[Run], role: str) -> Call:
        """A state's verdict by its runs in hand (an end's own row, ``role`` "end", by the end's rule)."""
        ...

    def steer(self, v: Verdict) -> Verdict:
        """A state's verdict as the search takes it (a person's ``unsure`` leaves the state out)."""
        ...

    def confirmed(self, good: Verdict, bad: Verdict) -> bool:
        """Whether fresh verdicts on the last good and first bad states confirm the answer."""
        ...

    def check_end(self, pair_text: str, got: Verdict, want: Verdict, find_fix: bool) -> UserError | None:
        """An end measured that is not what the window says it is (None: it is)."""
        ...

    def given_end(self, side: Verdict, origin: str) -> Call:
        """An end taken as given (a person's bisection: what the window says it is)."""
        ...

    def rate(self, seen: Sequence[int | None] | None = None) -> RateTest | None:
        """The failure-rate test in force (None: the runs decide); runs ``seen`` that both pass and
        fail turn exit mode to it, for the rest of the bisection."""
        ...
