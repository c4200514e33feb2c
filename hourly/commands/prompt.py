"""The terminal a manual bisection asks at (hourly.bisect.manual.Prompt): the state on stderr, a
verdict read from stdin without blocking, so the bisection also sees one ``hourly mark`` gives."""

from __future__ import annotations

import select
import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from hourly.bisect.manual import Asked


class TerminalPrompt:
    def __init__(self, stdin: TextIO | None = None, out: TextIO | None = None):
        self.stdin = stdin or sys.stdin
        self.out = out or sys.stderr
        self.closed = False  # stdin reached its end (a lost terminal, </dev/null): hourly mark only

    def _say(self, text: str, end: str = "\n") -> None:
        from hourly.render.console import escape_controls  # subjects are data, never terminal codes
        print(escape_controls(text), end=end, file=self.out, flush=True)

    def show(self, asked: Asked) -> None:
        from hourly.render.manual import PROMPT, asked_lines
        for line in asked_lines(asked):
            self._say(line)
        if self.closed:
            self._say("  (no terminal to type at: waiting for hourly mark)")
        else:
            self._say(PROMPT, end="")

    def poll(self, timeout: float) -> str | None:
        if self.closed:
            time.sleep(timeout)
            return None
        try:
            ready, _, _ = select.select([self.stdin], [], [], timeout)
        except (ValueError, OSError):  # no file descriptor to wait on
            self.closed = True
            return None
        if not ready:
            return None
        line = self.stdin.readline()
        if line == "":
            self.closed = True
            self._say("\n  stdin closed: waiting for `hourly mark good|bad|skip|unsure` from another shell")
            return None
        return line.rstrip("\n")

    def said(self, text: str) -> None:
        from hourly.render.manual import PROMPT
        self._say(f"  {text}")
        if not self.closed and text.split(":")[0] not in ("good", "bad", "skip", "unsure"):
            self._say(PROMPT, end="")
