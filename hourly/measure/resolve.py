"""Revision resolution: which (xla, jax) pair stood at each instant.

For an instant T and a walk of ``ref``'s history (first-parent by default), the commit is the first
one in ``git rev-list`` walk order whose committer time is ≤ T — exactly what
``git rev-list -1 [--first-parent] --before=T ref`` prints — found for every instant from ONE walk
per repository. Committer times along a walk are not always monotonic, so the search runs on the
walk's running minimum, which is monotonic and first drops to ≤ T exactly at the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.timeline import Resolver
from hourly.model import Pair
from hourly.timeparse import iso_utc

if TYPE_CHECKING:
    from hourly.measure.pinned import Pin


@dataclass(frozen=True)
class PlannedPoint:
    time: datetime
    pair: Pair

    @property
    def label(self) -> str:
        return iso_utc(self.time)




def resolve_pairs(xla: GitRepo | None, jax: GitRepo, times: list[datetime], ref: str = "origin/main",
                  first_parent: bool = True, pin: Pin | None = None) -> list[PlannedPoint]:
    """One history walk per repository, then every instant is a lookup; the side ``pin`` keeps
    (``--only``) is a walk of one commit that stood at every instant."""
    resolvers = {}
    for repo in (xla, jax):
        if repo is None or (pin is not None and repo.name == pin.side):
            continue
        repo.rev_parse(ref)  # a clear error for an unknown ref
        resolvers[repo.name] = Resolver(repo.history(ref, first_parent))
    if pin is not None:
        resolvers[pin.side] = Resolver(pin.walk())
    points = []
    for t in times:
        ts = int(t.timestamp())
        x, j = resolvers["xla"].at(ts), resolvers["jax"].at(ts)
        if x is None or j is None:
            continue  # before the first commit of a repo: nothing to build
        points.append(PlannedPoint(t, Pair(x, j)))
    return points


def distinct_pairs(points: list[PlannedPoint]) -> list[Pair]:
    """Each pair once, in the order of its first instant."""
    seen: dict[Pair, None] = {}
    for p in points:
        seen.setdefault(p.pair, None)
    return list(seen)
