"""Counted nouns that read right: "1 build", "2 builds", "no steps found"."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1; ``many`` for irregular plurals."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def found(n: int, word: str, many: str | None = None) -> str:
    """A heading for a list of findings: "no steps found", "1 step found:", "2 steps found:"."""
    if n == 0:
        return f"no {many or word + 's'} found"
    return f"{plural(n, word, many)} found:"
