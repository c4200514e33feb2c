"""Which commit of one history walk stood at an instant, without running git again (pure)."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


class Resolver:
    """Answers 'which commit stood at T' for one walk, without running git again."""

    def __init__(self, walk: list[tuple[str, int]]):
        self._shas = [sha for sha, _ in walk]
        # running minimum of committer times along the walk, negated to be non-decreasing
        neg_min = []
        lowest = None
        for _, ts in walk:
            lowest = ts if lowest is None else min(lowest, ts)
            neg_min.append(-lowest)
        self._neg_min = neg_min

    def at(self, ts: int) -> str | None:
        """The first commit of the walk with committer time ≤ ts (None if none)."""
        i = bisect.bisect_left(self._neg_min, -ts)
        return self._shas[i] if i < len(self._shas) else None

