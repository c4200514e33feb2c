"""The seams of a window's bisection: what its drives measure, remember and record through (the
:class:`Lab`), who gives a manual bisection's words (the :class:`Witness`), and the window they
share (:class:`WindowState`).

A leaf of hourly.bisect: the drives (drive, chain_drive, metric_drive, step_session, paired_rounds)
and the answer import it, and it imports none of them. The :class:`~hourly.bisect.search.Bisector`
is the lab of a real bisection; a test hands a table instead (tests/test_drive.py).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Protocol, Sequence

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.bisection import State
from hourly.analysis.judges import Evidence, Judge
from hourly.answers import Commit, EndSamples
from hourly.bisect.events import BisectHandler
from hourly.bisect.pairing import TimePairing
from hourly.bisect.records import Probe, Taken, Where, Window
from hourly.errors import UserError
from hourly.model import Pair
from hourly.text.timeparse import iso_utc

__all__ = ["Histories", "Lab", "Metered", "WindowState", "Witness", "iso"]


def iso(ts: int) -> str:
    """A unix time as hourly prints instants (UTC)."""
    return iso_utc(datetime.fromtimestamp(ts, timezone.utc))


class Witness(Protocol):
    """Who gives the verdicts of a manual bisection (hourly.bisect.manual.Person): the state is made
    ready and the person asked; their word comes back as evidence for the manual judge."""

    def ask(self, lab: Any, bid: int, pair: Pair, role: str, where: Where | None, ends: tuple[Pair, Pair]) -> Taken:
        """The person's word on ``pair`` (``where``: its place in the window; ``ends``: the window's)."""
        ...

    def resume_at(self, bid: int) -> Pair | None:
        """The probe a stopped bisection waited at (it resumes there), if any."""
        ...

    def recorded(self, bid: int, p: Probe) -> None:
        """A verdict was recorded: the word that gave it is taken."""
        ...


class Lab(Protocol):
    """What a bisection's search measures, remembers and records through."""

    judge: Judge
    handler: BisectHandler
    witness: Witness | None
    max_repeats: int
    min_change: float
    find_fix: bool
    rounds: int
    jobs: int
    #: metric mode: the window search whose rest of the window goes on (hourly.bisect.metric_drive.Going)
    going: Any
    #: the named metric followed (--metric; its answer says it), None: the regex's one metric
    metric: str | None
    #: why paired verdicts were measured one state after another after all (an in-place build);
    #: None while every round interleaved (hourly.bisect.metric_drive.measure_rounds sets it)
    apart: str | None

    @property
    def interleaves(self) -> bool:
        """Whether states can be run alternately without installing them again (each its own
        environment, measured here one request after another): paired rounds interleave."""
        ...

    def crash_line(self, pair: Pair) -> str | None:
        """The last line a crashed run of ``pair`` printed (None: no crash in hand)."""
        ...

    @property
    def workers(self) -> int:
        """States measured per round."""
        ...

    @property
    def repeats(self) -> int:
        ...

    @property
    def higher_is_better(self) -> bool:
        ...

    @property
    def mixed_states(self) -> bool:
        """A step that moves both repositories holds the mixed state old xla + new jax (time pairing)."""
        ...

    @property
    def pairing_name(self) -> str:
        ...

    @property
    def pinned(self) -> dict | None:
        """What a one-repository hunt kept fixed, for the answer."""
        ...

    def measure_many(self, reqs: list[tuple[Pair, int]]) -> list[Taken]:
        """Each (pair, count) measured (recorded in the store as it is taken), in the order asked: one round."""
        ...

    def stored(self, pair: Pair) -> list[Evidence]:
        """Every measurement of ``pair`` in hand (the scan's, earlier bisections')."""
        ...

    def known_failed(self, pair: Pair) -> str | None:
        """Why ``pair`` cannot be built (a recorded build failure, too new for --only's jaxlib), or None."""
        ...

    def cost(self, pair: Pair) -> float:
        ...

    def record(self, bid: int, p: Probe) -> Probe:
        """A verdict as a row of the bisection, and an event."""
        ...

    def unbuilt_end(self, pair: Pair, role: str) -> UserError | None:
        ...

    def probes(self, bid: int) -> list[dict]:
        ...

    def keep_round(self, bid: int, pairs: Sequence[Pair], block: Mapping[Pair, float | None]) -> None:
        """One round of a paired verdict of bisection ``bid`` over ``pairs`` (in the verdict's
        order), kept as it ends: each process's value (its samples with it)."""
        ...

    def take_rounds(self, bid: int, pairs: Sequence[Pair], count: int) -> list[dict[Pair, float | None]]:
        """Up to ``count`` rounds over ``pairs`` that bisection ``bid`` kept in a call before this
        one and that no verdict of this call has taken yet, oldest first (each handed back once)."""
        ...

    def kept_rounds(self, bid: int, pairs: Sequence[Pair]) -> int:
        """How many such rounds are left to take."""
        ...

    def kept_states(self, bid: int) -> list[list[Pair]]:
        """The states of each verdict (in its order) with such rounds left to take."""
        ...

    def moved(self, old: Pair, new: Pair) -> dict[str, list[str]]:
        """Per repository, the commits a step from ``old`` to ``new`` brings (the pairing's)."""
        ...

    def commit(self, repo: str, sha: str) -> Commit:
        ...

    def cherry_picks(self, pair: Pair) -> dict[str, str] | None:
        ...


class WindowState:
    """What the drives of one window of ``states`` (its bisection ``bid``, its stored rows ``rows``)
    share: its lab, the rows stored before, the ends its verdicts compare with and what the answer
    says of how they were measured. :class:`hourly.bisect.drive.WindowDrive` runs the window; the
    parts it hands the window to (the chain, the metric search, the answer) read and record through
    this."""

    def __init__(self, lab: Lab, w: Window, states: list[State], bid: int, rows: list[dict]):
        self.lab, self.w, self.states, self.bid, self.rows = lab, w, states, bid, rows
        #: stored verdict rows by (role, pair): what a resumed bisection does not do again
        self.stored = {(r["role"], Pair(r["xla"], r["jax"])): r for r in rows}
        #: the states the verdicts compare with: the window's ends, then the step's two states
        self.ends = (states[0].pair, states[-1].pair)
        #: per end of the window: how many samples the verdicts compared against, and from where
        self.end_samples: dict[str, EndSamples] = {}
        #: metric mode: how the verdicts were measured (paired: "interleaved", or why one state after
        #: another), the machine's drift said on the way, the crash windows the search found
        self.measured: str | None = None
        self.drifts: list[str] = []
        self.crash_windows: list[dict] = []
        self.round_no = 0  # rounds of paired verdicts measured in this window (each round's order alternates)

    def record(self, p: Probe) -> Probe:
        return self.lab.record(self.bid, p)

    def where(self, between: str = " .. ") -> str:
        """The window in words: ``<good> .. <bad>`` (UTC)."""
        return f"{iso(self.w.good_time)}{between}{iso(self.w.bad_time)}"


class Histories(Protocol):
    """What a window is read against (the :class:`~hourly.bisect.search.Bisector`'s): the checkouts,
    the refs their histories were walked from, the walks and the pairing of their states."""

    repos: dict[str, GitRepo]
    refs: dict[str, str]
    walks: dict[str, list[tuple[str, int]]]
    pairing: TimePairing


class Metered(Protocol):
    """A lab that counts the benchmark's seconds and tells its handler of each process."""

    handler: BisectHandler
    #: the benchmark's seconds the window bisected now has spent, in the calls before a resume too
    #: (hourly.bisect.drive.WindowDrive sets it from the store as the window begins)
    seconds: float
