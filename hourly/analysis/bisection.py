"""The pure parts of bisection: candidate states, probe choice, the window search (no I/O).

*States.* Between a good instant and a bad one, every first-parent commit of either repository
that lands inside the window makes a new state: xla and jax each at their last first-parent commit
at or before that commit's committer time (the scan's pairing rule, via
:class:`hourly.analysis.timeline.Resolver`). So every state is one the hourly loop could have built, and two
adjacent states differ by the commits of one step — usually one commit of one repository.

*Search.* States ``0..n-1`` with 0 known good and ``n-1`` known bad. A probe's cost is what it
needs: 0 for a state already measured, a little for a state whose wheels are cached (benchmark runs
only), a little more when only the jax package must be built (its jaxlib is cached, docs/builds.md), 1 for
a build. The next probe minimises its cost plus the expected number of halvings still
needed after it (``(a·log2 a + b·log2 b)/N`` for the two sides ``a`` and ``b``), so a free state
near the middle beats a build at the exact middle, and builds stay near ``log2(n)``. Untestable
states (build failed, unsure after all repeats) are left out and the search goes on with their
neighbours; when only untestable states separate the last good from the first bad, the answer is
that range.

*Verdicts* are the judges' (hourly.analysis.judges: metric, exit, flaky, printed, manual); the
search here only takes them.

*Every step of a window* (metric mode): :class:`StepSearch` keeps intervals whose ends lie at
different levels and asks the metric judge (:meth:`~hourly.analysis.judges.metric.MetricJudge.level`)
whether a probe stands at the earlier end's level, at the later end's, or at least ``--min-change``
from both — then both halves are searched. It is driven by a ``measure(state, count)`` callback,
so the Bisector and ``benchmarks/window_hunt.py`` (simulated measurements) run the same decisions;
its rounds of W states are planned by :class:`~hourly.analysis.rounds.RoundPlanner`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from hourly.analysis.judges.base import Verdict
from hourly.analysis.judges.metric import Judgement, Level
from hourly.analysis.timeline import Resolver
from hourly.model import BISECT_MIN_CHANGE, REPOS, Blame, Pair

__all__ = ["Verdict", "Level", "Judgement"]  # the verdict words, as the searches take them

# -- states -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class State:
    time: int   # unix seconds: the committer time that made this state (the window's start for state 0)
    pair: Pair


def candidate_states(walks: dict[str, list[tuple[str, int]]], t_good: int, t_bad: int) -> list[State]:
    """The states from ``t_good`` to ``t_bad``: state 0 stands at ``t_good``, the last at ``t_bad``.

    ``walks`` maps "xla"/"jax" to ``(sha, committer time)`` in ``git rev-list --first-parent`` order.
    """
    if t_bad <= t_good:
        raise ValueError("the bad end must be later than the good end")
    res = {name: Resolver(walks[name]) for name in REPOS}

    def at(t: int) -> Pair | None:
        x, j = res["xla"].at(t), res["jax"].at(t)
        return Pair(x, j) if x and j else None

    times = sorted({ts for name in REPOS for _, ts in walks[name] if t_good < ts <= t_bad})
    out: list[State] = []
    first = at(t_good)
    if first is not None:
        out.append(State(t_good, first))
    for t in times:
        p = at(t)
        if p is not None and (not out or out[-1].pair != p):
            out.append(State(t, p))
    last = at(t_bad)
    if last is not None and (not out or out[-1].pair != last):
        out.append(State(t_bad, last))
    return out


def step_commits(walks: dict[str, list[tuple[str, int]]], old: Pair, new: Pair) -> dict[str, list[str]]:
    """Per repository, the first-parent commits a step from ``old`` to ``new`` brings (oldest first)."""
    out: dict[str, list[str]] = {}
    for name in REPOS:
        a, b = getattr(old, name), getattr(new, name)
        if a == b:
            out[name] = []
            continue
        shas = [s for s, _ in walks[name]]
        i_new, i_old = shas.index(b), shas.index(a)
        out[name] = list(reversed(shas[i_new:i_old]))
    return out


# -- search -----------------------------------------------------------------------------------

#: Probe costs, in builds.
COST_MEASURED = 0.0
COST_CACHED = 0.05
COST_JAX_BUILD = 0.1  # jaxlib cached, the pure-Python jax package built (hourly.measure.native_inputs): seconds
COST_BUILD = 1.0


@dataclass(frozen=True)
class Bounds:
    lo: int  # last state known good
    hi: int  # first state after lo known bad

    @property
    def adjacent(self) -> bool:
        return self.hi - self.lo == 1


def bounds(n: int, verdicts: dict[int, Verdict]) -> Bounds:
    """The last good state before the first bad one (state 0 is good, n-1 bad by definition)."""
    bad = [i for i, v in verdicts.items() if v is Verdict.BAD and 0 < i] + [n - 1]
    hi = min(bad)
    good = [i for i, v in verdicts.items() if v is Verdict.GOOD and i < hi] + [0]
    return Bounds(max(good), hi)


def expected_halvings(a: int, b: int) -> float:
    """Expected log2 of the interval left after a probe splitting it into ``a`` and ``b`` steps."""
    n = a + b
    return sum(k * math.log2(k) for k in (a, b) if k > 0) / n


def next_probe(n: int, verdicts: dict[int, Verdict], costs: dict[int, float] | None = None,
               later_on_ties: bool = False, jump_runs: bool = False) -> int | None:
    """The state to test next, or None when the last good and first bad are settled.

    States with a final verdict (good, bad, skip) are not probed again; ``costs`` gives each
    state's cost in builds (default: a build). Of two states that score the same and lie as far
    from the middle, the earlier is taken; with ``later_on_ties`` the later (exit mode's search:
    the later middle, as the peer's ``len // 2`` takes it; the same builds in total on every family
    of benchmarks/peer_builds.py, and its shallow leaves where the peer's are).

    ``jump_runs`` (exit mode's search over the chain): a run of untestable states is jumped, not
    walked (:func:`run_probes`). ``verdicts`` must then hold the verdicts in the order they were
    reached (a dict keeps its insertion order): after two untestable probes in a row the search
    looks for the run's two edges.
    """
    b = bounds(n, verdicts)
    costs = costs or {}
    if jump_runs:
        plan = run_probes(n, verdicts, costs, later_on_ties)
        if plan is not None:
            return plan[0] if plan else None
    return _best(range(b.lo + 1, b.hi), b, verdicts, costs, later_on_ties)


def _score(i: int, b: "Bounds", costs: dict[int, float], later_on_ties: bool) -> tuple[float, float, int]:
    return (costs.get(i, COST_BUILD) + expected_halvings(i - b.lo, b.hi - i), abs(i - (b.lo + b.hi) / 2),
            -i if later_on_ties else i)


def _best(candidates: Iterable[int], b: "Bounds", verdicts: dict[int, Verdict], costs: dict[int, float],
          later_on_ties: bool) -> int | None:
    best, best_score = None, None
    for i in candidates:
        if verdicts.get(i) in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP):
            continue
        score = _score(i, b, costs, later_on_ties)
        if best_score is None or score < best_score:
            best, best_score = i, score
    return best


#: Untestable probes in a row, beyond ⌈log2⌉ of the span, that the search spends looking inside a
#: run of untestable states before it answers with the run (:func:`run_probes`).
RUN_LOOKS = 4


def failed_in_a_row(verdicts: dict[int, Verdict]) -> int:
    """How many of the latest verdicts (in the order reached) are untestable, back to the last
    good or bad one."""
    k = 0
    for v in reversed(list(verdicts.values())):
        if v is not Verdict.SKIP:
            break
        k += 1
    return k


def run_probes(n: int, verdicts: dict[int, Verdict], costs: dict[int, float] | None = None,
               later_on_ties: bool = False) -> list[int] | None:
    """The exit search inside a run of untestable states (``next_probe(..., jump_runs=True)``):
    None when the search is not inside one (fewer than two untestable probes in a row: probe as
    usual, the state beside an untestable one included), else the next probe (one state) or
    ``[]``: the run is jumped, the answer is the range across it.

    Builds break in runs — a commit breaks the build and every state after it until a later
    commit fixes it — so two untestable probes in a row, with no good or bad state between them,
    are taken as one run: the states between them are not probed now. The run's two edges are
    found instead, by bisecting the stretch between the last good state and the run, and between
    the run and the first bad (two logarithmic searches: each side's middle; of the two, the one
    that scores better goes first). A state found there that is good or bad moves the bounds
    and the search goes on as usual. When neither side has a state left, the search looks inside
    the run (the middle of its widest gap between two untestable states: two breaks close together
    leave states between them that build) while fewer than ⌈log2(span)⌉ + :data:`RUN_LOOKS`
    probes in a row were untestable, or while the states left inside are no more than those
    probes (building them all costs no more than the run has cost). Then it stops: the answer is
    the range from the last good to the first bad state, and it names the states inside that were
    not built (hourly.bisect.answer; ``--walk-skips`` builds them).

    What it gives up: a state that builds, alone between two long runs, can be left unbuilt, and
    the range is then wider than walking every state would have made it (never another commit:
    every verdict is measured). tests/test_bisect_math.py checks every span of up to 16 states,
    every first bad state, every run and every pair of runs: the same answers as walking (up to
    24 states: the same for every single run, with 4 % fewer probes; 0.26 % of the two-run cases
    end wider, e.g. runs 1–3 and 5–19 of 21 states with the culprit in the first). On
    benchmarks/peer_builds.py the peer's scenarios with 98 broken commits of 101 cost 102 builds
    walked and 13–15 jumped, every answer the same; the generated families are unchanged."""
    if failed_in_a_row(verdicts) < 2:
        return None
    b = bounds(n, verdicts)
    costs = costs or {}
    failed = sorted(i for i, v in verdicts.items() if v is Verdict.SKIP and b.lo < i < b.hi)
    if len(failed) < 2:
        return None

    def middle(a: int, z: int) -> int | None:
        """The state without a verdict nearest the middle of ``a .. z``."""
        free = [i for i in range(a + 1, z) if i not in verdicts]
        m = (a + z) / 2
        return min(free, key=lambda i: (abs(i - m), -i if later_on_ties else i)) if free else None
    sides = [i for i in (middle(b.lo, failed[0]), middle(failed[-1], b.hi)) if i is not None]
    if sides:
        return [min(sides, key=lambda i: _score(i, b, costs, later_on_ties))]
    spent = failed_in_a_row(verdicts)
    gaps = [(a, z) for a, z in zip(failed, failed[1:], strict=False) if middle(a, z) is not None]
    left = sum(1 for i in range(b.lo + 1, b.hi) if i not in verdicts)
    if not gaps or spent >= math.ceil(math.log2(b.hi - b.lo)) + RUN_LOOKS and left > spent:
        return []
    a, z = max(gaps, key=lambda g: (g[1] - g[0], -g[0]))
    return [middle(a, z)]  # type: ignore[list-item]


def not_probed(n: int, verdicts: dict[int, Verdict]) -> list[int]:
    """States between the last good and the first bad state with no verdict: the run of
    untestable states the search jumped (:func:`run_probes`)."""
    b = bounds(n, verdicts)
    return [i for i in range(b.lo + 1, b.hi) if i not in verdicts]


#: Extra cost of a state that shares its xla or jax commit with a state that failed to build (and
#: with no state that built): a break usually holds the neighbouring states too, so the search
#: looks a little further away first (benchmarks/peer_builds.py).
COST_NEAR_BREAK = 0.25


def with_mixed_states(states: Sequence[State]) -> list[State]:
    """The chain a search walks: ``states`` with, inside each step that moves both repositories
    (commits with the same committer time), the mixed state old xla + new jax at the step's time.

    That state is the first mixed pair of the blame step (:func:`next_blame`). As a probe of the
    search it splits the step's two commits like any other state: bad, the jax commit alone brings
    the change and no blame build is left; good, the xla commit does (or the pair of them), and the
    blame step has one mixed pair left. Every state of the chain holds at least the commits of the
    one before it, so the search's order (good before bad) holds on it."""
    out: list[State] = []
    for st in states:
        if out and out[-1].pair.xla != st.pair.xla and out[-1].pair.jax != st.pair.jax:
            out.append(State(st.time, Pair(out[-1].pair.xla, st.pair.jax)))
        out.append(st)
    return out


def timeline_bounds(chain: Sequence[State], states: Sequence[State], b: Bounds) -> Bounds:
    """Bounds found on :func:`with_mixed_states`' chain as bounds on ``states``: a mixed state
    lies inside the step from state k-1 to state k; good, state k-1 is good (it holds less), bad,
    state k is bad (it holds more)."""
    index = {st.pair: i for i, st in enumerate(states)}

    def side(c: int, later: bool) -> int:
        p = chain[c].pair
        if p in index:
            return index[p]
        k = index[chain[c + 1].pair]  # a mixed state is always followed by the state of its step
        return k if later else k - 1
    return Bounds(side(b.lo, False), side(b.hi, True))


def near_breaks(pairs: Sequence[Pair], failed: Iterable[Pair], built: Iterable[Pair]) -> set[int]:
    """Indices of ``pairs`` that share an xla or jax commit with a ``failed`` state (one that did
    not build) which no ``built`` state holds: the suspects of a build break."""
    ok = {c for p in built for c in (("xla", p.xla), ("jax", p.jax))}
    suspects = {c for p in failed for c in (("xla", p.xla), ("jax", p.jax))} - ok
    return {i for i, p in enumerate(pairs) if ("xla", p.xla) in suspects or ("jax", p.jax) in suspects}


def next_blame(good: Pair, bad: Pair, known: Mapping[Pair, Verdict], on_chain: bool = False) -> Pair | Blame:
    """The blame step of a step that moves both repositories, from the last good state ``good`` to
    the first bad ``bad``: the mixed pair to test next, or the answer once ``known`` (verdicts of
    states tested so far) decides it. Old xla + new jax first, then new xla + old jax: the first
    that is bad names the repository to blame; both good: neither change alone regresses (BOTH);
    one untestable: UNKNOWN.

    ``on_chain``: old xla + new jax is a state of the search's chain (:func:`with_mixed_states`,
    exit mode) and its verdict came from the search. Good, it is the chain's last good state and
    the step from it to ``bad`` moves xla alone: like every other step of the chain, its commit
    is named from the two measured states, XLA_ON_NEW_JAX (on the new jax; new xla + old jax,
    which would tell "xla alone" from "only the pair", is not built: it is the one build a blamed
    xla commit cost over the peer's search, benchmarks/peer_builds.py)."""
    for mixed in (Pair(good.xla, bad.jax), Pair(bad.xla, good.jax)):
        v = known.get(mixed)
        if v is None:
            return mixed
        if v is Verdict.BAD:
            return Blame.JAX if mixed.xla == good.xla else Blame.XLA
        if v is not Verdict.GOOD:
            return Blame.UNKNOWN
        if on_chain:
            return Blame.XLA_ON_NEW_JAX
    return Blame.BOTH


def plain_bisection_probes(n: int, first_bad: int) -> int:
    """How many probes a plain bisection (always the midpoint) needs over states 0..n-1."""
    lo, hi, k = 0, n - 1, 0
    while hi - lo > 1:
        m = (lo + hi) // 2
        k += 1
        if m >= first_bad:
            hi = m
        else:
            lo = m
    return k


def split_points(m: int, k: int, skip: Iterable[int] = (), costs: dict[int, float] | None = None,
                 fixed: Iterable[int] = ()) -> list[int]:
    """``k`` states of ``1..m-2`` to probe at once, which (with the ``fixed`` states, measured
    already) split states ``0..m-1`` into parts of equal expected cost: a round of a parallel search.

    They minimise the same score as :func:`next_probe` summed over the round: each probe's cost
    plus the expected log2 of the part left (``Σ d·log2 d / (m-1)`` over the parts ``d``). With
    equal costs the optimum is ``k+1`` equal parts, about ``log_(k+1)`` rounds in all; a cheap
    state (cached, measured) pulls a probe towards it. Found by moving one probe at a time between
    its neighbours from the equal split (``k=1``: exactly :func:`next_probe`'s choice). ``skip``:
    states not to probe."""
    costs = costs or {}
    fixed = set(fixed)
    taken = set(skip) | fixed
    eligible = [i for i in range(1, m - 1) if i not in taken]
    k = min(k, len(eligible))
    if k <= 0:
        return []

    def f(d: int) -> float:
        return d * math.log2(d) if d > 1 else 0.0

    pts: list[int] = []
    for j in range(1, k + 1):  # start: equal parts, each end snapped to the nearest state left
        t = (m - 1) * j / (k + 1)
        pts.append(min((x for x in eligible if x not in pts), key=lambda x: (abs(x - t), x)))
    pts.sort()
    for _ in range(20):
        moved = False
        for j in range(k):
            others = fixed | set(pts[:j]) | set(pts[j + 1:])
            lo = max([x for x in others if x < pts[j]] + [0])
            hi = min([x for x in others if x > pts[j]] + [m - 1])
            mid = (lo + hi) / 2
            best = min((x for x in range(lo + 1, hi) if x not in taken),
                       key=lambda x: (costs.get(x, COST_BUILD) + (f(x - lo) + f(hi - x)) / (m - 1), abs(x - mid), x))
            if best != pts[j]:
                pts[j], moved = best, True
        if not moved:
            break
    return sorted(pts)


def plan_probes(n: int, verdicts: dict[int, Verdict], k: int, costs: dict[int, float] | None = None) -> list[int]:
    """Up to ``k`` states to test at once (a round of a k-ary :func:`next_probe`): they split the
    span between the last good and the first bad state into ``k+1`` parts of equal expected cost.
    ``k=1`` is :func:`next_probe`. Empty when the last good and first bad are settled."""
    b = bounds(n, verdicts)
    skip = {i - b.lo for i in range(b.lo + 1, b.hi) if verdicts.get(i) in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP)}
    local = {i - b.lo: c for i, c in (costs or {}).items() if b.lo < i < b.hi}
    return [b.lo + x for x in split_points(b.hi - b.lo + 1, k, skip, local)]


def exit_transitions(verdicts: Sequence[Verdict | None]) -> list[tuple[int, int]]:
    """(last good index, first bad index) for every good→bad transition; skips and None are passed over."""
    out, last_good, seen_bad = [], None, False
    for i, v in enumerate(verdicts):
        if v is Verdict.GOOD:
            last_good, seen_bad = i, False
        elif v is Verdict.BAD:
            if last_good is not None and not seen_bad:
                out.append((last_good, i))
            seen_bad = True
    return out


# -- every step of a window: its records (the search: hourly.analysis.step_search) ---------------

#: The smallest step worth pinning, relative to the level (``hourly bisect --min-change``).
DEFAULT_MIN_CHANGE = BISECT_MIN_CHANGE


@dataclass(frozen=True)
class Step:
    """A step between states ``lo`` (last at the earlier level) and ``hi`` (first at the later);
    ``hi - lo > 1`` when only untestable states lie between them."""
    lo: int
    hi: int
    before: float  # mean level at lo
    after: float   # mean level at hi

    @property
    def adjacent(self) -> bool:
        return self.hi - self.lo == 1

    @property
    def relative(self) -> float:
        return (self.after - self.before) / abs(self.before) if self.before else 0.0

    def regression(self, higher_is_better: bool) -> bool:
        return self.after < self.before if higher_is_better else self.after > self.before


class Pending(Exception):
    """A round driver's answer to ``measure`` when the samples asked for are not in hand yet: the
    search stops where it stands (nothing is lost; :meth:`StepSearch.run` goes on from there once
    they are), and the driver measures them in the next round with the states it plans."""

    def __init__(self, state: int, count: int):
        super().__init__(state, count)
        self.state, self.count = state, count
        #: states the same verdict compares with next, and how many samples each needs in all
        self.ends: dict[int, int] = {}
        self.probe: int | None = None  # the state being judged, inside ``interval``
        self.interval: tuple[int, int] | None = None
