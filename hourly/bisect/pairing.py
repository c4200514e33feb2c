"""How a bisection pairs JAX and XLA into the states it searches (``--pairing``).

* :class:`TimePairing` (``time``, the default): the merged first-parent timeline of both
  repositories — at each instant the commit of each that stood then, as a nightly container's
  ``build-jax.sh`` builds JAX against the XLA checkout beside it.
* :class:`PinPairing` (``pin``): JAX's first-parent commits, each with the XLA commit its pin
  names (:mod:`hourly.measure.pins`), as released and nightly jaxlib wheels and JAX's CI build it.
* :class:`ListedStates` : a descent into a pin bump (:mod:`hourly.bisect.descent`): the
  dependency's first-parent commits between the old and the new pin, everything else held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.bisection import State, candidate_states, step_commits
from hourly.errors import UserError
from hourly.measure.pins import PinReader
from hourly.model import Pair

if TYPE_CHECKING:
    from hourly.measure.settings import Settings

PAIRINGS = ("time", "pin")


class TimePairing:
    name = "time"
    #: whether the search may probe the mixed state (old xla + new jax) inside a step moving both
    mixed_states = True

    def states(self, walks: dict[str, list[tuple[str, int]]], t_good: int, t_bad: int) -> list[State]:
        return candidate_states(walks, t_good, t_bad)

    def moved(self, walks: dict[str, list[tuple[str, int]]], old: Pair, new: Pair) -> dict[str, list[str]]:
        return step_commits(walks, old, new)

    def ident(self) -> dict:
        """What the bisection's stored key adds (nothing: keys stored before pairings stay valid)."""
        return {}


class PinPairing(TimePairing):
    """JAX's first-parent states, each with its pinned XLA commit."""

    name = "pin"
    mixed_states = False

    def __init__(self, jax: GitRepo, xla: GitRepo):
        self.reader = PinReader(jax, "xla", xla)

    def states(self, walks: dict[str, list[tuple[str, int]]], t_good: int, t_bad: int) -> list[State]:
        jax_only = candidate_states({"xla": [("-", 0)], "jax": walks["jax"]}, t_good, t_bad)
        return [State(st.time, Pair(self.reader.pin(st.pair.jax).rev, st.pair.jax)) for st in jax_only]

    def moved(self, walks: dict[str, list[tuple[str, int]]], old: Pair, new: Pair) -> dict[str, list[str]]:
        # the XLA commit follows the JAX commit's pin: only JAX commits are candidates
        return {"xla": [], "jax": step_commits(walks, old, new)["jax"]}

    def ident(self) -> dict:
        return {"pairing": "pin"}


class ListedStates(TimePairing):
    """A fixed list of states (a descent): the window's times select the part of it to search."""

    name = "descent"
    mixed_states = False

    def __init__(self, states: list[State], dep: str, walk: list[tuple[str, int]]):
        self.listed, self.dep, self.walk = states, dep, walk

    def states(self, walks: dict[str, list[tuple[str, int]]], t_good: int, t_bad: int) -> list[State]:
        return [st for st in self.listed if t_good <= st.time <= t_bad]

    def moved(self, walks: dict[str, list[tuple[str, int]]], old: Pair, new: Pair) -> dict[str, list[str]]:
        shas = [sha for sha, _ in self.walk]
        i, j = shas.index(old.xla), shas.index(new.xla)
        return {"xla": shas[i + 1:j + 1], "jax": []}

    def ident(self) -> dict:
        return {"pairing": "descent", "dep": self.dep, "states": [st.pair.xla for st in self.listed]}


def pairing_for(s: Settings, xla: GitRepo | None, jax: GitRepo) -> TimePairing:
    """The pairing ``s.pairing`` names (``hourly.measure.settings.Settings``)."""
    name = getattr(s, "pairing", "time") or "time"
    if name == "time":
        return TimePairing()
    if name != "pin":
        raise UserError(f"--pairing {name!r} is not a pairing", "pass --pairing time or --pairing pin")
    if xla is None or s.only:
        raise UserError("--pairing pin builds each JAX commit with the XLA commit it pins, but --only holds one "
                        "repository still", "leave --only out, or pass --pairing time")
    return PinPairing(jax, xla)
