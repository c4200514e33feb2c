"""What a bisection reports while it runs: the search calls a :class:`BisectHandler`; a command
that shows progress implements one (hourly.render.bisect.LineHandler prints lines)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hourly.errors import UserError
from hourly.events import Handler

if TYPE_CHECKING:
    from hourly.bisect.records import Probe, Window
    from hourly.model import Pair


@dataclass(frozen=True)
class ProcessDone:
    """One benchmark process of a verdict's rounds has finished: which verdict (``what``: ``ends``,
    ``probe 3 of ~7``, ``blame``), the state it measured, the round, the change the rounds read so
    far (``change`` ± ``error``, a fraction of the level; None before two rounds), the benchmark's
    seconds the window's bisection has spent so far, in the calls before a resume too (``chip_s``),
    and about how long until the verdict settles (None: unknown)."""

    what: str
    pair: "Pair"
    round: int
    change: float | None
    error: float | None
    chip_s: float
    settle_s: float | None
    #: what ``round`` counts: a paired verdict's rounds, or (verdicts not paired) the runs of one
    #: measurement of the state
    unit: str = "round"
    #: the per-process statistic the change is read by, in words, where one was chosen on the
    #: window's ends ("" : each process by its median, none chosen)
    by: str = ""
    #: a probe that reads nearer "a level of its own" (a step this size from the end it is nearer,
    #: three quarters of --min-change, as a fraction) than that end's level: it is taken at the
    #: end's level only once its reading moves back, and "a level of its own" needs Wald's bound,
    #: so ``settle_s`` is that bound's guess ("" words otherwise); which end: ``near`` ("earlier",
    #: "later")
    midway: float | None = None
    near: str = ""


class BisectHandler(Handler):
    """What a bisection reports while it runs (mozregression's BisectorHandler): the events of
    every level (:class:`hourly.events.Handler`) and the search's own; a command that shows
    progress overrides them. The default stays silent."""

    #: words for the verdicts (finding a fix, git bisect's --term-old/--term-new: old, fixed)
    terms: dict[str, str] = {}

    def started(self, w: Window, states: int, resumed: int) -> None:
        """A window's search begins (``resumed`` stored verdicts are reused)."""

    def verdict(self, p: Probe) -> None:
        """A state was judged (an end, a probe, a confirmation or a mixed pair)."""

    def process(self, e: ProcessDone) -> None:
        """A benchmark process of a verdict's rounds finished (paired verdicts: a line per process)."""

    def cannot_bisect(self, w: Window, e: UserError) -> None:
        """A window from the store cannot be bisected; the others go on."""

    def nothing_to_bisect(self) -> None:
        """The stored scan holds no regression and no crash window."""

