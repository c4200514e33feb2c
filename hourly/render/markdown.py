"""Text from outside (commit subjects, authors, paths, log lines, labels) made safe for the
markdown of a JAX/XLA issue: it reads as the words it is and never as markdown or HTML.

- :func:`text`: running text — ``<script>`` stays text (``&lt;script&gt;``), ``*``, ``_``,
  backticks, brackets and ``|`` are escaped, a newline is a space;
- :func:`cell`: the same, for a table cell (a ``|`` never ends the cell);
- :func:`code`: an inline code span that no backtick inside it can close (``in_table``: a ``|``
  in it escaped as GitHub's tables want);
- :func:`html_text`: the same words for HTML (a page's text or attribute): ``&``, ``<``, ``>``
  and quotes escaped, every control character and bidirectional override shown as its escape;
- :func:`subject`: a culprit's subject as people know it — a merged pull request by its own
  subject, not "Merge pull request #1009 from …".
"""

from __future__ import annotations

import re
from typing import Any

#: what markdown (GitHub's: tables, strikethrough, math) reads as formatting anywhere in a line; outside
#: text never starts a line here, so list and heading markers (``-``, ``#``, ``1.``) need no escape, and
#: with the brackets escaped no ``(`` can make a link
_SPECIAL = re.compile(r"([\\`*\[\]|~$]|(?<![^\W_])_|_(?![^\W_]))")  # "_" inside a word (CUDA_VERSION) is text
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _one_line(s: object) -> str:
    """One line: newlines and tabs a space, every other control character its escape (an ESC
    sequence reads ``\x1b[31m``; hourly.render.console.escape_controls)."""
    from hourly.render.console import escape_controls
    return escape_controls(re.sub(r"[\r\n\t]+", " ", str(s)))


def text(s: object) -> str:
    """``s`` as literal markdown text (one line)."""
    out = _SPECIAL.sub(r"\\\1", _one_line(s))
    return re.sub(r"[&<>]", lambda m: _HTML[m[0]], out)


def html_text(s: object) -> str:
    """``s`` as literal HTML text or attribute value: markup escaped (:func:`html.escape`), control
    characters and bidirectional overrides shown as their escapes (``\x1b``, ``\u202e``), as the
    markdown and the terminal show them, so that no subject reverses or hides the line it is in."""
    import html

    from hourly.render.console import escape_controls
    return html.escape(escape_controls(str(s)), quote=True)


def cell(s: object) -> str:
    """``s`` as the literal text of a table cell ('-' for an empty one)."""
    return text(s) if str(s) != "" else "-"


def code(s: object, in_table: bool = False) -> str:
    """``s`` as an inline code span: its fence is longer than any run of backticks in it."""
    body = _one_line(s)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ") and body.strip()):
        body = f" {body} "
    if in_table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def subject(commit: Any) -> str:
    """The subject a culprit is known by (raw text; escape it where it goes): a merge commit of a
    pull request is named by the pull request's own subject — its one commit's, or its first
    commit's with how many more it brought — as the terminal names it; any other commit by its own.
    ``commit``: an answer's (hourly.answers.Commit) or its JSON."""
    c = commit.to_json() if hasattr(commit, "to_json") else commit
    merged = c.get("merged") or []
    if not merged:
        return str(c.get("subject", ""))
    first = merged[-1]  # git log lists the pull request's commits newest first
    more = f" (+{len(merged) - 1} more commit{'s' if len(merged) > 2 else ''})" if len(merged) > 1 else ""
    return f"{first['subject']}{more}"
