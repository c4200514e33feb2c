"""What a bisection reports while it runs: the search calls a :class:`BisectHandler`; a command
that shows progress implements one (hourly.render.bisect.LineHandler prints lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.errors import UserError
from hourly.events import Handler

if TYPE_CHECKING:
    from hourly.bisect.records import Probe, Window


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

    def cannot_bisect(self, w: Window, e: UserError) -> None:
        """A window from the store cannot be bisected; the others go on."""

    def nothing_to_bisect(self) -> None:
        """The stored scan holds no regression and no crash window."""

