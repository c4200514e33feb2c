"""Revision resolution: which (xla, jax) pair stood at each instant.

For an instant T and a walk of ``ref``'s history (first-parent by default), the commit is the first
one in ``git rev-list`` walk order whose committer time is ≤ T — exactly what
``git rev-list -1 [--first-parent] --before=T ref`` prints — found for every instant from ONE walk
per repository. Committer times along a walk are not always monotonic, so the search runs on the
walk's running minimum, which is monotonic and first drops to ≤ T exactly at the answer. The walk is
only the part the window needs: the commits dated at or before its last instant, down to the first
one dated at or before its first instant (:func:`hourly.analysis.timeline.window_walk` proves that
this answers every instant of the window as the whole history does).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Mapping

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.timeline import Resolver
from hourly.errors import ProcessError, UserError
from hourly.model import Pair
from hourly.text.timeparse import iso_utc

if TYPE_CHECKING:
    from hourly.measure.pinned import Pin


@dataclass(frozen=True)
class PlannedPoint:
    time: datetime
    pair: Pair

    @property
    def label(self) -> str:
        return iso_utc(self.time)



def ref_for(ref: str | Mapping[str, str], repo: str) -> str:
    """The ref of ``repo`` in ``ref``: one ref for both repositories, or one per repository."""
    return ref if isinstance(ref, str) else ref[repo]


def resolve_pairs(xla: GitRepo | None, jax: GitRepo, times: list[datetime], ref: str | Mapping[str, str] = "origin/main",
                  first_parent: bool = True, pin: Pin | None = None, allow_missing: bool = False) -> list[PlannedPoint]:
    """One history walk per repository, then every instant is a lookup; the side ``pin`` keeps
    (``--only``) is a walk of one commit that stood at every instant. ``ref``: the ref of both
    repositories, or each one's (``{"xla": ..., "jax": ...}``, :meth:`Settings.refs`).

    An instant before the first commit of a repository's fetched history (the repository's own
    first commit, or a shallow clone's cut-off) is a :class:`MissingHistory` error naming the
    fix: a scan that silently left those hours out would call a regression in them "no step".
    ``allow_missing`` leaves such instants out instead (for comparisons with ``git rev-list``)."""
    repos: dict[str, GitRepo] = {}
    resolvers = {}
    stamps = [int(t.timestamp()) for t in times]
    # the part of each walk the window needs (hourly.analysis.timeline.window_walk has the proof)
    newest, oldest = (max(stamps), min(stamps)) if stamps else (None, None)
    for repo in (xla, jax):
        if repo is None or (pin is not None and repo.name == pin.side):
            continue
        own = ref_for(ref, repo.name)
        repos[repo.name] = repo
        try:
            walk = repo.history(own, first_parent, newest, oldest)
        except ProcessError:
            repo.rev_parse(own)  # a clear error for an unknown ref (no process spent on it otherwise)
            raise
        resolvers[repo.name] = Resolver(walk)
    if pin is not None:
        resolvers[pin.side] = Resolver(pin.walk())
    points = []
    missing: dict[str, list[datetime]] = {}
    for t in times:
        ts = int(t.timestamp())
        x, j = resolvers["xla"].at(ts), resolvers["jax"].at(ts)
        for name, sha in (("xla", x), ("jax", j)):
            if sha is None:
                missing.setdefault(name, []).append(t)
        if x is None or j is None:
            continue  # before the first commit of a repo: nothing to build
        points.append(PlannedPoint(t, Pair(x, j)))
    if missing and not allow_missing:
        name = next(iter(missing))
        raise MissingHistory(repos[name], ref_for(ref, name), first_parent, missing[name], len(times))
    return points


class MissingHistory(UserError):
    """Instants of the window lie before the first commit of a repository's fetched history."""

    def __init__(self, repo: GitRepo, ref: str, first_parent: bool, lost: list[datetime], asked: int,
                 walk: list[tuple[str, int]] | None = None, search: str = "a scan", start_flag: str = "--from",
                 lead: str | None = None):
        """``walk``: the history walked already (else walked here); ``search`` and ``start_flag``:
        what would go without those instants, and the flag that moves the window's start; ``lead``:
        what lies before the history, in words (else the count of ``lost`` among ``asked``)."""
        walk = repo.history(ref, first_parent) if walk is None else walk
        first = min(ts for _, ts in walk) if walk else None
        shallow = repo.is_shallow()
        since = iso_utc(datetime.fromtimestamp(first, timezone.utc)) if first is not None else "?"
        what = (f"the cut-off of the shallow clone ({since})" if shallow
                else f"its first commit ({since})")
        lead = lead or (f"{len(lost)} of {asked} instants of the window ({iso_utc(lost[0])} .. {iso_utc(lost[-1])}) "
                        "lie")
        message = (f"{lead} before the history of the {repo.name} repository {repo.path}: {what}; "
                   f"no commit stands there, and {search} that leaves those hours out could miss a regression in them")
        fix = (f"run `git -C {repo.path} fetch --unshallow` (or a deeper `git fetch --shallow-since`), "
               f"or pass {start_flag} at or after {since}" if shallow
               else f"pass {start_flag} at or after {since}")
        self.repo, self.first, self.shallow, self.lost = repo.name, since, shallow, lost
        super().__init__(message, fix)


def distinct_pairs(points: list[PlannedPoint]) -> list[Pair]:
    """Each pair once, in the order of its first instant."""
    seen: dict[Pair, None] = {}
    for p in points:
        seen.setdefault(p.pair, None)
    return list(seen)
