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

import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

# the noise floor and prior are detection's: one definition, so a step and its bisection agree
from hourly.analysis.detect import NOISE_FLOOR_RELATIVE, PRIOR_RELATIVE_NOISE
from hourly.analysis.judges.base import Verdict
from hourly.analysis.judges.metric import INDIFFERENCE, Judgement, Level, MetricJudge, resolvable_change
from hourly.analysis.samples import Samples, location, pooled_sigma
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
               later_on_ties: bool = False) -> int | None:
    """The state to test next, or None when the last good and first bad are settled.

    States with a final verdict (good, bad, skip) are not probed again; ``costs`` gives each
    state's cost in builds (default: a build). Of two states that score the same and lie as far
    from the middle, the earlier is taken; with ``later_on_ties`` the later (exit mode's search:
    the later middle, as the peer's ``len // 2`` takes it; the same builds in total on every family
    of benchmarks/peer_builds.py, and its shallow leaves where the peer's are).
    """
    b = bounds(n, verdicts)
    costs = costs or {}
    best, best_score = None, None
    mid = (b.lo + b.hi) / 2
    for i in range(b.lo + 1, b.hi):
        if verdicts.get(i) in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP):
            continue
        score = (costs.get(i, COST_BUILD) + expected_halvings(i - b.lo, b.hi - i), abs(i - mid),
                 -i if later_on_ties else i)
        if best_score is None or score < best_score:
            best, best_score = i, score
    return best


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


# -- every step of a window, under noise --------------------------------------------------------
#
# The search above needs a verdict per state, good or bad, against two fixed ends: one step. A
# window may hold several (two regressions, a regression and an improvement that hides part of
# it), and a state between two steps fits neither end. ``StepSearch`` finds them all: it keeps
# intervals whose ends are known to differ, probes inside one (``next_probe``'s cost-aware choice),
# and decides by a sequential test whether the probe sits at the level of the interval's earlier
# end, of its later end, or at least ``min_change`` away from both — then the interval is split
# on that side, or on both. The same test answers "does the rest of the window hold another step
# of at least min_change": every interval is only ever narrowed by it, never by a comparison of
# a few fixed samples.

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


#: measure(state, count) -> ``count`` new samples, or None when the state is untestable.
MeasureFn = Callable[[int, int], "list[float] | None"]
#: measure_many({state: count}) -> {state: ``count`` new samples, or None when untestable}: one round.
MeasureManyFn = Callable[[dict[int, int]], "dict[int, list[float] | None]"]


@dataclass
class _Span:
    """An open interval ``a..b`` that :meth:`StepSearch.plan_ahead` spreads new states over (offsets
    from ``a``: ``skip`` are never probed, ``fixed`` are measured already; ``room`` states are left
    to probe, ``want`` of them now)."""
    a: int
    b: int
    skip: set[int]
    fixed: set[int]
    room: int
    want: int = 0


def share_slots(rooms: Sequence[int], k: int, first: int | None = None) -> list[int]:
    """How many of a round's ``k`` new states each open gap gets (``rooms``: the states left to
    probe in each): every slot to the gap whose largest part would be largest, ``(room+1)/(got+1)``
    — the part a step may still hide in after the round, whose log_(W+1) is the rounds it still
    needs, so the round leaves the fewest rounds for the slowest gap. ``first``: a gap that gets a
    state before any other (the one the search waits on). Never more states than a gap's room."""
    got = [0] * len(rooms)
    if first is not None and k > 0 and rooms[first] > 0:
        got[first] = 1
    for _ in range(k - sum(got)):
        open_ = [g for g in range(len(rooms)) if got[g] < rooms[g]]
        if not open_:
            break
        g = max(open_, key=lambda g: ((rooms[g] + 1) / (got[g] + 1), -g))
        got[g] += 1
    return got


def same_level(x: Samples, y: Samples, delta: float) -> bool:
    """Whether two states' samples look like one level, for planning (never a verdict): their
    locations closer than half the smallest step searched for (``delta``), so "no step between
    them" is the likelier of "none" and "at least ``delta``". A gap between two such states is not
    probed ahead; a wrong guess costs a round (the search still judges every gap it needs, and the
    gap it waits on is always planned), never a verdict."""
    return abs(location(x) - location(y)) < delta / 2


#: Draws of :func:`verdict_samples`' simulation, and the share of them that must be decided.
PLAN_DRAWS = 64
PLAN_DECIDED = 0.75


def verdict_samples(low: float, high: float, sigma: float, dof: int, delta: float, start: int, cap: int) -> int:
    """How many samples (of a probe and of its interval's two ends, as :meth:`StepSearch.sequential`
    takes them) a verdict between levels ``low`` and ``high`` is expected to need, for planning
    only: the first of ``start``, 2·``start``, … (up to ``cap``) at which :func:`judge` decides
    ``PLAN_DECIDED`` of ``PLAN_DRAWS`` simulated probes (Gaussian noise ``sigma``, a fixed seed, at
    either level). A probe measured ahead with that many at once is judged without waiting rounds
    for its doublings; the verdicts themselves are still the sequential test's, on real samples.
    Scale-free and memoised on the arguments relative to ``low`` (two significant digits)."""
    scale = abs(low) or 1.0

    def r(x: float) -> float:
        return float(f"{x / scale:.2g}")
    return _verdict_samples(r(high - low), r(sigma), min(dof, 64), r(delta), start, cap)


@functools.lru_cache(maxsize=4096)
def _verdict_samples(gap: float, sigma: float, dof: int, delta: float, start: int, cap: int) -> int:
    low, high = 1.0, 1.0 + gap
    rng = np.random.default_rng(0)
    n = max(1, start)
    while n < cap:
        grown = dof + 3 * (n - start)  # the probe's and both ends' new samples join the pooled noise
        decided = 0
        for t in range(PLAN_DRAWS):
            a, b, p = (list(mu + sigma * rng.standard_normal(n)) for mu in (low, high, (low, high)[t % 2]))
            decided += MetricJudge.level(p, a, b, sigma, grown, delta).level is not Level.UNSURE
        if decided >= PLAN_DECIDED * PLAN_DRAWS:
            break
        n = min(2 * n, cap)
    return min(n, cap)


def first_round_samples(min_change: float, repeats: int, max_repeats: int) -> int:
    """The samples of each state of a window's first round (its ends, and the probes beside them),
    before anything is known of the noise: :func:`verdict_samples` for a step of ``min_change``
    on the prior noise (``PRIOR_RELATIVE_NOISE``), at least ``repeats``. Runs, never builds: a state
    measured with too few waits a round of its own for the rest."""
    return max(repeats, verdict_samples(1.0, 1.0 - min_change, PRIOR_RELATIVE_NOISE, 2 * (max(repeats, 2) - 1),
                                        INDIFFERENCE * min_change, repeats, max_repeats))


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


class StepSearch:
    """Every step of at least ``min_change`` between states 0 and n-1 (whose levels differ),
    earliest first, driven by ``measure``; pure logic, no I/O of its own.

    ``known`` gives samples already in hand per state (a scan's, an earlier search's);
    ``failed`` states already known untestable (with the reason); ``cost(i)`` a state's cost in
    builds (default: 0 once sampled, else 1). ``on_verdict(i, judgement)`` hears every verdict;
    ``judge`` decides them (the metric judge: hourly.analysis.judges.metric).
    With ``stop_at_regression`` the search stops at the first regression it pins and says in
    ``more_after`` whether intervals after it still hold a step.
    """

    def __init__(self, n: int, measure: MeasureFn, *, repeats: int = 1, max_repeats: int = 20,
                 min_change: float = DEFAULT_MIN_CHANGE, higher_is_better: bool = True,
                 cost: Callable[[int], float] | None = None, known: Mapping[int, Sequence[float]] | None = None,
                 failed: dict[int, str] | None = None,
                 on_verdict: Callable[[int, Judgement], None] | None = None, stop_at_regression: bool = False,
                 judge: MetricJudge | None = None):
        if n < 2:
            raise ValueError("a window needs two states")
        self.n, self.measure = n, measure
        self.judge = judge or MetricJudge(max_repeats)  # where a probe stands, and whether two states differ
        self.repeats, self.max_repeats = max(1, repeats), max(1, max_repeats, repeats)
        self.min_change, self.higher_is_better = min_change, higher_is_better
        self.samples: dict[int, list[float]] = {i: list(v) for i, v in (known or {}).items() if v}
        self.failed: dict[int, str] = dict(failed or {})
        self.unsure: set[int] = set()
        self.verdicts: dict[int, Judgement] = {}
        self._cost = cost
        self.on_verdict = on_verdict or (lambda i, j: None)
        self.stop_at_regression = stop_at_regression
        self.steps: list[Step] = []
        self.more_after = False
        self.dropped: list[tuple[int, int]] = []  # intervals whose ends turned out not to differ
        # intervals whose ends differ, the earliest on top; ``check``: one test said so (a probe
        # between two levels, or an unsure one), so a second, on the ends themselves, must agree
        self._stack: list[tuple[int, int, bool]] = [(0, n - 1, False)]
        self._root = list(range(n))  # states judged at one level share a root: their samples pool
        self._ready: dict[int, list[float]] = {}  # rounds: samples measured, not yet asked for
        self.rounds = 0  # rounds of measure_many so far (run_rounds)
        self._predicted: tuple[tuple, int] | None = None  # predicted(): its last answer and what it rested on

    def _find(self, i: int) -> int:
        while self._root[i] != i:
            self._root[i] = self._root[self._root[i]]
            i = self._root[i]
        return i

    def _join(self, i: int, j: int) -> None:
        self._root[self._find(i)] = self._find(j)

    def ref(self, i: int) -> list[float]:
        """Every sample of the states judged at state ``i``'s level: the reference for that level,
        more precise with every probe that lands on it."""
        r = self._find(i)
        return [x for j in range(self.n) if self._find(j) == r for x in self.samples.get(j, ())]

    # -- samples and noise ------------------------------------------------------------------
    def get(self, i: int, want: int) -> list[float] | None:
        """State ``i``'s samples, measuring more until there are ``want`` (None: untestable)."""
        if i in self.failed:
            return None
        s = self.samples.setdefault(i, [])
        if len(s) < want and self._ready.get(i):  # measured ahead in a round: every one of them first
            s.extend(self._ready.pop(i))
        if len(s) < want:
            new = self.measure(i, want - len(s))
            if new is None:
                self.failed.setdefault(i, "untestable")
                return None
            s.extend(new)
        return s

    def noise(self) -> tuple[float, int]:
        """One sample's standard deviation, pooled over every state sampled more than once."""
        groups = [g for g in self.samples.values() if g]
        level = float(np.median([abs(location(g)) for g in groups])) if groups else 1.0
        s, dof = pooled_sigma(groups)
        floor = max(NOISE_FLOOR_RELATIVE * level, 1e-12)
        return max(s if s is not None else PRIOR_RELATIVE_NOISE * level, floor), dof

    def delta(self, sigma: float) -> float:
        """The smallest step searched for: --min-change of the level (or the whole window's change,
        when that is smaller: the window was asked for), or what the repeats can resolve."""
        level = abs(location(self.samples[0])) if self.samples.get(0) else 1.0
        want = self.min_change * level
        if self.samples.get(self.n - 1) and self.samples.get(0):
            want = min(want, abs(location(self.samples[self.n - 1]) - location(self.samples[0])))
        return max(INDIFFERENCE * want, resolvable_change(sigma, self.max_repeats))

    def cost(self, i: int) -> float:
        if self._ready.get(i):
            return COST_MEASURED
        if self._cost is not None:
            return self._cost(i)
        return COST_MEASURED if self.samples.get(i) else COST_BUILD

    def mean(self, i: int) -> float:
        return location(self.samples[i])

    # -- one verdict --------------------------------------------------------------------------
    def sequential(self, sample: Callable[[int], "list[float] | None"], a: int, b: int) -> Judgement:
        """Judge samples from ``sample(want)`` between states ``a`` and ``b``: more samples (doubling,
        the ends as many as the probe) while unsure, up to ``max_repeats``."""
        p = sample(self.repeats)
        while True:
            if p is None:
                return self.judge.untestable("untestable")
            want = min(len(p), self.max_repeats)
            self.get(a, want), self.get(b, want)
            low, high = self.ref(a), self.ref(b)
            sigma, dof = self.noise()
            final = len(p) >= self.max_repeats
            j = self.judge.level(p, low, high, sigma, dof, self.delta(sigma), final)
            if j.level is not Level.UNSURE:
                return j
            want = min(2 * len(p), self.max_repeats)
            try:
                p = sample(want)
            except Pending as e:  # the ends follow the probe to as many samples: same round
                e.ends.update({a: want, b: want})
                raise

    def apart(self, a: int, b: int, own: bool = False) -> bool:
        """Whether states ``a`` and ``b`` (their levels' pooled samples, or with ``own`` their own)
        differ by at least the smallest step searched for: a sequential test, both states sampled
        more (as often as each other, up to --max-repeats) while it is unsure; then the likelier."""
        want = max(len(self.samples.get(a, ())), len(self.samples.get(b, ())), 1)
        while True:
            try:
                x, y = self.get(a, want), self.get(b, want)
            except Pending as e:
                e.ends.update({a: want, b: want})
                raise
            if x is None or y is None:
                return True
            if not own:
                x, y = self.ref(a), self.ref(b)
            sigma, dof = self.noise()
            final = want >= self.max_repeats
            d = self.judge.differ(x, y, sigma, dof, self.delta(sigma), final)
            if d is not None or final:
                return d is not False
            want = min(2 * want, self.max_repeats)

    def decide(self, i: int, a: int, b: int) -> Judgement:
        if i in self.failed:
            j = self.judge.untestable(self.failed[i])
        else:
            try:
                j = self.sequential(lambda want: self.get(i, want), a, b)
            except Pending as e:
                if e.probe is None:
                    e.probe, e.interval = i, (a, b)
                raise
            if j.level is Level.SKIP and i in self.failed:
                j = self.judge.untestable(self.failed[i])
        if j.level is Level.SKIP:
            self.unsure.add(i)
        self.verdicts[i] = j
        self.on_verdict(i, j)
        return j

    # -- the search ---------------------------------------------------------------------------
    def run(self) -> list[Step]:
        """Pin every step (or, with ``stop_at_regression``, up to the next regression: call again
        to go on to the one after it). Returns every step pinned so far."""
        stack = self._stack
        while stack:
            a, b, check = stack[-1]  # popped once dealt with: a round driver re-enters after Pending
            if check and not self.apart(a, b):
                stack.pop()
                self.dropped.append((a, b))
                continue
            skip = {i - a: Verdict.SKIP for i in range(a + 1, b) if i in self.failed or i in self.unsure}
            costs = {i - a: self.cost(i) for i in range(a + 1, b) if i - a not in skip}
            j = next_probe(b - a + 1, skip, costs)
            if j is None:
                if b - a == 1 and not self.apart(a, b, own=True):
                    stack.pop()
                    self.dropped.append((a, b))  # the two states themselves do not differ
                    continue
                stack.pop()
                step = Step(a, b, location(self.ref(a)), location(self.ref(b)))
                self.steps.append(step)
                if self.stop_at_regression and step.regression(self.higher_is_better):
                    self.more_after = bool(stack)
                    return self.steps
                continue
            i = a + j
            v = self.decide(i, a, b).level
            stack.pop()
            if v is Level.SKIP:
                stack.append((a, b, i in self.unsure and i not in self.failed))
            elif v is Level.LOW:
                self._join(i, a)
                stack.append((i, b, False))
            elif v is Level.HIGH:
                self._join(i, b)
                stack.append((a, i, False))
            else:
                stack += [(i, b, True), (a, i, True)]
        self.more_after = False
        return self.steps

    # -- the search, W states a round -------------------------------------------------------
    def run_rounds(self, measure_many: MeasureManyFn, workers: int) -> tuple[list[Step], int]:
        """:meth:`run` with up to ``workers`` states measured together per round, through one call
        ``measure_many({state: count})``; returns the steps pinned so far and the rounds this call took.

        The search is :meth:`run`'s — the same probe choice and verdicts — but its ``measure``
        answers from samples in hand and otherwise raises :class:`Pending`. The round then holds
        what the search waits for, the samples the same verdict needs next (its interval's ends),
        and, to fill ``workers`` states, probes planned ahead: when the search wants a new probe,
        ``workers`` states splitting the open intervals (the one searched now first, then the
        rest of the stack, each slot to the interval with the largest parts) into equal expected
        cost (:func:`split_points`). Measured, they cost nothing, so the search walks through them
        without waiting. ``workers=1`` makes exactly :meth:`run`'s probes, one per round."""
        workers = max(1, workers)
        ready = self._ready

        def take(i: int, count: int) -> list[float]:
            got = ready.get(i, [])
            if len(got) >= count:
                ready[i] = got[count:]
                return got[:count]
            raise Pending(i, count - len(got))

        measure, self.measure = self.measure, take
        rounds = 0
        try:
            while True:
                try:
                    return self.run(), rounds
                except Pending as e:
                    reqs = self.plan_round(e, workers)
                    got = measure_many(reqs)
                    rounds += 1
                    self.rounds += 1
                    for i in reqs:
                        new = got.get(i)
                        if new is None:
                            self.failed.setdefault(i, "untestable")
                            ready.pop(i, None)
                        else:
                            ready.setdefault(i, []).extend(new)
        finally:
            self.measure = measure

    def plan_round(self, e: Pending, workers: int) -> dict[int, int]:
        """The requests of the next round ({state: samples}) for a search stopped at ``e``."""
        reqs = {e.state: e.count}
        for i, total in e.ends.items():
            have = len(self.samples.get(i, ())) + len(self._ready.get(i, ()))
            if len(reqs) < workers and i not in reqs and i not in self.failed and total > have:
                reqs[i] = total - have
        if workers == 1:
            return reqs
        need = None
        if e.probe == e.state and not self.samples.get(e.state) and not self._ready.get(e.state):
            del reqs[e.state]  # a new probe: the plan picks the round's new states (the search follows)
            need = e.state
        typical = self.typical()
        for i in self.plan_ahead(workers - len(reqs), set(reqs), need):
            reqs[i] = typical
        if need is not None and e.interval is not None and not any(e.interval[0] < i < e.interval[1] for i in reqs):
            reqs[need] = e.count  # the plan put nothing where the search waits: what it asked for
        reqs.update(self.top_ups(workers - len(reqs), set(reqs)))
        # slots left: states measured ahead, not yet judged, get the samples a verdict usually takes
        for i in sorted(self._ready, key=lambda i: -len(self._ready[i])):
            have = len(self.samples.get(i, ())) + len(self._ready[i])
            if len(reqs) < workers and i not in reqs and i not in self.failed and i not in self.verdicts \
                    and have < typical:
                reqs[i] = typical - have
        return reqs or {e.state: e.count}

    def typical(self) -> int:
        """How many samples a verdict took so far (the median; --repeats before the first): a probe
        measured ahead gets as many at once, so its verdict need not wait for rounds of repeats."""
        used = sorted(len(self.samples.get(i, ())) for i, j in self.verdicts.items()
                      if j.level in (Level.LOW, Level.HIGH, Level.NEITHER) and self.samples.get(i))
        return min(max(self.repeats, used[len(used) // 2] if used else 0, self.predicted()), self.max_repeats)

    def predicted(self) -> int:
        """The samples a verdict in the open intervals is expected to need (:func:`verdict_samples`,
        on the noise so far and the levels of each interval's ends); --repeats when nothing is known."""
        key = (sum(len(v) for v in self.samples.values()), tuple(self._stack))
        if self._predicted is not None and self._predicted[0] == key:
            return self._predicted[1]
        sigma, dof = self.noise()
        delta = self.delta(sigma)
        need = self.repeats
        for a, b, _ in self._stack:
            x, y = self.ref(a), self.ref(b)
            if x and y:
                need = max(need, verdict_samples(location(x), location(y), sigma, dof, delta, self.repeats,
                                                 self.max_repeats))
        self._predicted = (key, need)
        return need

    def plan_ahead(self, k: int, exclude: set[int], need: int | None = None) -> list[int]:
        """Up to ``k`` new states to measure ahead, shared between every open gap of every open
        interval (:meth:`open_gaps`: what earlier rounds measured, judged or not, already splits
        the intervals, and only the gaps whose two sides differ can hold a step), each slot to the
        gap whose largest part is largest (:func:`share_slots`), spread over it by
        :func:`split_points`. ``need``: the new state the search waits on; its gap gets a state
        first."""
        if k <= 0:
            return []
        gaps = self.open_gaps(exclude, need)
        if not gaps:
            return []
        first = next((g for g, sp in enumerate(gaps) if sp.want), None)
        shares = share_slots([sp.room for sp in gaps], k, first)
        out = []
        for sp, want in zip(gaps, shares, strict=True):
            if want:
                a, b = sp.a, sp.b
                costs = {i - a: self.cost(i) for i in range(a + 1, b) if i - a not in sp.skip}
                out += [a + x for x in split_points(b - a + 1, want, sp.skip, costs)]
        return out

    def top_ups(self, k: int, exclude: Iterable[int] = ()) -> dict[int, int]:
        """Up to ``k`` more-samples requests ({state: count}) for the ends of the open intervals
        that have fewer than :meth:`typical` samples of their own (with those measured ahead): a
        verdict in an interval takes its ends to as many samples as its probe, so a round with
        slots left measures them now instead of a round of their own later."""
        typical, exclude = self.typical(), set(exclude)
        out: dict[int, int] = {}
        for a, b, _ in reversed(self._stack):
            for i in (a, b):
                have = len(self.samples.get(i, ())) + len(self._ready.get(i, ()))
                if len(out) < k and i not in out and i not in exclude and i not in self.failed and have < typical:
                    out[i] = typical - have
        return out

    def provisional(self, i: int) -> list[float]:
        """State ``i``'s samples as a round planner sees them: judged (its level's pooled samples)
        or measured ahead and not judged yet (its own, those in hand and those measured ahead)."""
        if i in self.verdicts or i in (0, self.n - 1):
            return self.ref(i) + list(self._ready.get(i, ()))
        return list(self.samples.get(i, ())) + list(self._ready.get(i, ()))

    def open_gaps(self, exclude: Iterable[int] = (), need: int | None = None) -> list[_Span]:
        """The gaps that may still hold a step, for planning a round: each open interval of the
        search cut at every state measured inside it (judged or measured ahead); a gap is open
        unless its two sides' samples are at the same level (:func:`same_level`: closer than half
        the smallest step searched for). The gap the search
        waits on (holding ``need``) is open whatever its sides, with ``want`` 1; ``room``: the states
        left to probe in a gap."""
        if not self._stack:
            return []
        exclude = set(exclude)
        sigma, _ = self.noise()
        delta = self.delta(sigma)
        out: list[_Span] = []
        for a, b, _ in reversed(self._stack):  # the interval searched now first
            cuts = [a] + [i for i in range(a + 1, b) if i not in self.failed and
                          (self.samples.get(i) or self._ready.get(i))] + [b]
            for p, q in zip(cuts, cuts[1:], strict=False):
                skip = {i - p for i in range(p + 1, q) if i in self.failed or i in self.unsure or i in exclude}
                room = q - p - 1 - len(skip)
                if room <= 0:
                    continue
                searched = need is not None and p < need < q
                x, y = self.provisional(p), self.provisional(q)
                if not searched and x and y and same_level(x, y, delta):
                    continue
                out.append(_Span(p, q, skip, set(), room, int(searched)))
        out.sort(key=lambda sp: -sp.want)
        return out

    def confirm(self, step: Step, fresh: Callable[[int, int], "list[float] | None"]) -> tuple[Judgement, Judgement]:
        """Fresh samples of the step's two states (``fresh(state, count)``), each judged between
        their stored samples: LOW then HIGH confirms the step."""
        out = []
        for i in (step.lo, step.hi):
            got: list[float] = []

            def sample(want: int, i=i, got=got) -> list[float] | None:
                if len(got) < want:
                    new = fresh(i, want - len(got))
                    if new is None:
                        return None
                    got.extend(new)
                return got
            out.append(self.sequential(sample, step.lo, step.hi))
        return out[0], out[1]
