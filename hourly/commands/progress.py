"""The command layer's handler of the core's events (hourly.events): what a person sees while a
level runs. On a terminal a progress bar (done/total, the item being worked on, time left); piped
into a file or ``tee``, one plain line as each item starts, so the log shows progress as it
happens; notes (stages, captured states) as lines either way. ``--json`` takes the silent handler.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Callable

from rich.console import Console

from hourly.events import Handler


class ProgressLines(Handler):
    """Progress of ``unit`` items (``pairs``, ``dates``, ``releases``) and notes, on ``console``.
    ``describe(item)`` says what is being done to an item. A context manager: the bar lives while
    the run does."""

    def __init__(self, console: Console, unit: str, describe: Callable[[object], str]):
        self.console, self.unit, self.describe = console, unit, describe
        self._stack = ExitStack()
        self._bar: Callable[[int, int, object], None] | None = None
        self._done = 0
        self._started = False  # an item was announced and is not finished yet

    def __enter__(self) -> ProgressLines:
        if self.console.is_terminal:
            from hourly.render.scan import progress_bar
            self._bar = self._stack.enter_context(progress_bar(self.console, self.unit, self.describe))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self._bar = None

    def progress(self, done: int, total: int, current: object | None = None) -> None:
        if self._bar is not None:
            self._bar(done, total, current)
        elif current is not None:
            self._started = True
            self.console.print(f"{self.unit} {done + 1}/{total}: {self.describe(current)}",
                               soft_wrap=True, highlight=False, markup=False)
        elif done > self._done and not self._started:  # finished elsewhere (a Slurm job): say so
            self.console.print(f"{self.unit} {done}/{total} done", soft_wrap=True, highlight=False, markup=False)
        else:
            self._started = False
        self._done = done

    def note(self, text: str) -> None:
        self.console.print(text, soft_wrap=True, highlight=False, markup=False)
