"""What the core reports while it runs, as events to a handler the command layer implements.

mozregression's ``BisectorHandler`` sits beside its ``Bisector``; here every level does the same:
the scan, the daily and release levels, the hunt and the profile call :class:`Handler`'s methods,
the bisection a subclass with its own events (:class:`hourly.bisect.events.BisectHandler`). The
core never prints; a command chooses a handler that draws a progress bar on a terminal, prints
one line per item when piped, or stays silent for ``--json``.
"""

from __future__ import annotations


class Handler:
    """The events every level reports. The default stays silent; a command overrides them."""

    def progress(self, done: int, total: int, current: object | None = None) -> None:
        """``done`` of ``total`` items (pairs, dates, releases) are finished; ``current`` is the one
        being worked on now (None between items)."""

    def note(self, text: str) -> None:
        """A line of narrative: a stage begins, a state is captured, a window is bisected."""


#: A handler that reports nothing (the default of every run).
SILENT = Handler()
