"""Counted nouns that read right: "1 build", "2 builds", "no steps found"."""

from __future__ import annotations

from typing import Any, Sequence


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1; ``many`` for irregular plurals."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def found(n: int, word: str, many: str | None = None) -> str:
    """A heading for a list of findings: "no steps found", "1 step found:", "2 steps found:"."""
    if n == 0:
        return f"no {many or word + 's'} found"
    return f"{plural(n, word, many)} found:"


def status_counts(points: Sequence[Any], noun: str) -> str:
    """"8 releases (4 ok, 4 missing)": the points counted, and how many hold each status, in the
    order the statuses first appear."""
    counts: dict[str, int] = {}
    for p in points:
        counts[p.status.value] = counts.get(p.status.value, 0) + 1
    return f"{plural(len(points), noun)} ({', '.join(f'{n} {k}' for k, n in counts.items())})"
