"""Which commit of one history walk stood at an instant, without running git again (pure)."""

from __future__ import annotations

import bisect


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


def window_walk(walk: list[tuple[str, int]], newest: int, oldest: int) -> list[tuple[str, int]]:
    """The part of a walk that answers every instant of the window ``[oldest, newest]`` exactly as
    the whole walk does: the commits dated at or before ``newest``, in walk order, up to and
    including the first one dated at or before ``oldest`` (all of them when none is).

    :meth:`hourly.adapters.gitrepo.GitRepo.history` reads this part straight from git
    (``git rev-list --before=@newest``, read until the first line dated ≤ ``oldest``), so a window
    deep below the tip of a long history costs the window's commits, not the history's.

    Why it is exact, whatever order the committer dates are in. Let W be the whole walk (the order
    ``git rev-list`` prints, first-parent or not) and, for an instant T, ans(T) the first commit of W
    dated ≤ T — what ``git rev-list -1 --before=T`` prints and what :meth:`Resolver.at` returns.
    Let F be W without the commits dated after ``newest`` (order kept), and k the first commit of F
    dated ≤ ``oldest``. Take any T with oldest ≤ T ≤ newest:

    1. ans(T) is in F (it is dated ≤ T ≤ newest), and it is the first commit of F dated ≤ T: every
       commit before it in F was before it in W, hence dated after T. So F answers T as W does.
    2. k is dated ≤ oldest ≤ T, so the first commit of F dated ≤ T is k or one before k: the commits
       of F after k never answer an instant of the window. Cutting F after k changes no answer.

    No margin is needed: a commit dated inside (or above) the window that lies below k in the walk
    — an out-of-order date — is not the answer to any instant of the window (k comes first in the
    walk and qualifies), and a commit near the tip dated below the window is kept (it is in F, at
    its place, before k). When F holds no commit dated ≤ ``oldest`` it is kept whole: the walk ran
    out (the repository's first commit, a shallow clone's cut-off) and the instants it cannot
    answer stay unanswered, as with the whole walk."""
    out = []
    for sha, ts in walk:
        if ts > newest:
            continue
        out.append((sha, ts))
        if ts <= oldest:
            break
    return out
