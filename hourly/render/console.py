"""What hourly prints to the terminal, and the one rule for it.

Text from outside — commit subjects and authors, paths, series labels, log lines, benchmark
output, image names, the user's own commands — is data. It is printed verbatim: never read as
rich markup (``[pallas] Fix ...`` keeps its tag, ``[/c] d`` is no MarkupError), never as emoji
codes (``:memory:``), and never coloured by rich's highlighter (no coloured digits inside a date
or a SHA, which would also split them with escape codes). So:

* every rich Console is made by :func:`console` (a :class:`HourlyConsole`): markup, emoji and
  highlighting off, whatever a call site passes. Style is given as :class:`rich.text.Text` with
  explicit styles (:func:`styled`), never as markup in a string — so no string needs escaping.
* tables (``console.print(table)``, :func:`print_table`): a cell is never cut. A table wider
  than the console (a pipe is 80 columns) is printed at its natural width instead of squeezed,
  so times stay ``2023-08-24T00:00:00Z`` and SHAs stay whole; each row stays one line.
* text (``console.print(text)``, :func:`print_text`): one logical line is one line, never
  wrapped by rich (a terminal folds it visually; a pipe keeps it whole for grep). A sentence that
  may run long (a step's line, a crash window's) is printed by :func:`print_wrapped` instead: broken
  at spaces to the console's width (80 in a pipe), continuations indented, a command at its end
  on a line of its own, whole; :func:`unwrap` reads such output back into its logical lines.
* commands for the user to run (resume, next step, reproduce) are built with :func:`shlex.join`
  and printed by :func:`print_command`: one line, quoted so that a shell splits it back into the
  same words.

Help text follows the same rule: the Typer app renders help as plain text (``rich_markup_mode=None``),
so ``[default: UTC]`` in a help string is shown as written.

Verbatim stops at control characters: an ESC sequence in a commit subject (a colour, a cursor move,
a title change), a carriage return that overwrites the line, a bidirectional override that reorders
it, would act on the terminal instead of being read. :func:`escape_controls` shows each as its
escape (``\x1b``, ``\r``, ``\u202e``); every HourlyConsole applies it to whatever it prints (text,
styled text, table cells and titles), and so do the lines hourly prints without a console (errors,
the manual bisection's prompt, ``git bisect`` logs) and markdown (hourly.render.markdown).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, Iterable, Sequence, TypedDict

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from hourly.options import join

#: wide enough to measure any table's natural width
_UNLIMITED = 1_000_000


#: what a terminal would act on instead of showing: C0 controls but tab and newline, DEL, C1 controls
#: (CSI is one of them), and the bidirectional overrides and isolates
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(ch: str) -> str:
    if ch == "\r":
        return "\\r"
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character (:data:`CONTROL`) shown as its escape, ``\x1b[31m`` for
    an ESC sequence: read, never acted on by the terminal. Tabs and newlines stay."""
    return CONTROL.sub(lambda m: _escaped(m[0]), text)


def escape_styled(text: Text) -> Text:
    """Styled text with its control characters escaped (:func:`escape_controls`), its styles kept on
    the same characters."""
    plain = text.plain
    if not CONTROL.search(plain):
        return text
    ends = [0]
    for ch in plain:
        ends.append(ends[-1] + (len(_escaped(ch)) if CONTROL.match(ch) else 1))
    out = Text(escape_controls(plain), style=text.style, justify=text.justify, overflow=text.overflow,
               no_wrap=text.no_wrap, end=text.end, tab_size=text.tab_size)
    for span in text.spans:
        out.stylize(span.style, ends[min(span.start, len(plain))], ends[min(span.end, len(plain))])
    return out


def _safe(obj: Any) -> Any:
    """A renderable with the control characters of its text escaped (strings, styled text, a table's
    title, caption, headers and cells); anything else as it is."""
    if isinstance(obj, str):
        return escape_controls(obj)
    if isinstance(obj, Text):
        return escape_styled(obj)
    if isinstance(obj, Table):
        for name in ("title", "caption"):
            if isinstance(getattr(obj, name), (str, Text)):
                setattr(obj, name, _safe(getattr(obj, name)))
        for column in obj.columns:
            column.header = _safe(column.header)
            column._cells = [_safe(c) for c in column._cells]  # rich keeps a column's cells here
    return obj


class HourlyConsole(Console):
    """A Console that keeps the rule whatever the call site passes: no markup, emoji or highlighting;
    control characters escaped (:func:`escape_controls`); text is soft-wrapped (one logical line
    stays one line); a table is never squeezed (see :func:`print_table`)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        kwargs.update(markup=False, emoji=False, highlight=False)
        objects = tuple(_safe(o) for o in objects)
        if len(objects) == 1 and isinstance(objects[0], Table):
            print_table(self, objects[0], **kwargs)
            return
        kwargs.setdefault("soft_wrap", True)
        super().print(*objects, **kwargs)


class PlainPrint(TypedDict, total=False):
    """Keyword arguments for ``Console.print`` that keep a line verbatim and unwrapped."""
    highlight: bool
    markup: bool
    soft_wrap: bool


def console(stderr: bool = False, **kwargs: Any) -> Console:
    """A Console for hourly's output: text is printed as given (no markup, emoji or highlighting)."""
    return HourlyConsole(stderr=stderr, markup=False, emoji=False, highlight=False, **kwargs)


def styled(*parts: str | tuple[str, str]) -> Text:
    """Text from plain pieces and ``(text, style)`` pairs; nothing in the pieces is interpreted."""
    return Text.assemble(*parts)


def print_text(con: Console, text: str | Text = "") -> None:
    """One logical line (or several, split at ``\\n``), never wrapped by rich."""
    con.print(text, soft_wrap=True, markup=False, emoji=False, highlight=False)


def print_lines(con: Console, lines: Iterable[str | Text]) -> None:
    for line in lines:
        print_text(con, line)


#: continuation lines of a wrapped sentence start with this
WRAP_INDENT = "  "
#: what introduces a command for the user to run at the end of a sentence ("bisect it: hourly ...")
_COMMAND = ": hourly "


def fit_lines(text: str, width: int) -> list[str]:
    """One logical line as lines of at most ``width`` columns, broken at spaces only (no word, time,
    SHA or path is split; continuations are indented). A command at its end, after ``: hourly``,
    goes on a line of its own and is never broken, so that it can be pasted whole."""
    head, sep, command = text.partition(_COMMAND)
    head += ":" if sep else ""
    lines = textwrap.wrap(head, max(width, 20), subsequent_indent=WRAP_INDENT, break_long_words=False,
                          break_on_hyphens=False) or [""]
    if sep:
        lines.append(WRAP_INDENT + "hourly " + command)
    return lines


def print_wrapped(con: Console, text: str) -> None:
    """A sentence that may run long, within the console's width (see :func:`fit_lines`)."""
    print_lines(con, fit_lines(text, con.width))


def unwrap(output: str) -> list[str]:
    """Lines printed by :func:`print_wrapped` joined back into their logical lines (a continuation,
    indented by WRAP_INDENT, joins the line before it with one space)."""
    lines: list[str] = []
    for line in output.splitlines():
        if lines and line.startswith(WRAP_INDENT) and line.strip() and lines[-1].strip():
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


def command_line(argv: Sequence[object]) -> str:
    """A command the user can paste: shell-quoted, one line, secret-looking values redacted
    (hourly.options.join; an hourly command is built by hourly.options.command_line)."""
    return join([str(a) for a in argv])


def print_command(con: Console, argv: Sequence[str] | str, prefix: str = "") -> None:
    """A command for the user to run, on one line (``argv`` is quoted with :func:`shlex.join`;
    a string is taken as an already quoted command)."""
    line = argv if isinstance(argv, str) else command_line(argv)
    print_text(con, prefix + line)


def natural_width(con: Console, renderable: RenderableType) -> int:
    return Measurement.get(con, con.options.update(max_width=_UNLIMITED), renderable).maximum


def print_table(con: Console, table: Table, **kwargs: Any) -> None:
    """Print a table whose cells are never cut: when it is wider than the console, it is laid out
    at its natural width and no line of it is cropped (a terminal folds the long lines; a pipe
    keeps them)."""
    width = natural_width(con, table)
    if width > con.width:
        table.width = width
        kwargs["crop"] = False
    Console.print(con, table, **kwargs)
