"""The rounds of the window search: W states measured together, planned so the search walks through
them without waiting (docs/parallel-rounds.md).

:class:`RoundPlanner` drives a :class:`~hourly.analysis.step_search.StepSearch` round by round (it
reads and fills the search's :class:`~hourly.analysis.search_state.SearchState`):
the search runs on the samples in hand and stops (:class:`~hourly.analysis.bisection.Pending`)
where it needs more; the round then holds what it waits for, the samples the same verdict needs
next, and states planned ahead to fill the workers. Planning only: every verdict is still the
search's, on real samples.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from hourly.analysis.bisection import Pending, Step, split_points
from hourly.analysis.detect import PRIOR_RELATIVE_NOISE
from hourly.analysis.judges.metric import INDIFFERENCE, Level, MetricJudge
from hourly.analysis.samples import Samples, location
from hourly.analysis.search_state import SearchState

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


class RoundPlanner:
    """The rounds of one :class:`~hourly.analysis.step_search.StepSearch` (its own planner: it reads
    the search's state — samples, verdicts, open intervals — and hands it what each round measured)."""

    def __init__(self, search: SearchState):
        self.search = search
        self._predicted: tuple[tuple, int] | None = None  # predicted(): its last answer and what it rested on

    def run(self, measure_many: MeasureManyFn, workers: int, search: Callable[[MeasureFn], list[Step]]
            ) -> tuple[list[Step], int]:
        """:meth:`StepSearch.run` with up to ``workers`` states measured together per round, through one call
        ``measure_many({state: count})``; returns the steps pinned so far and the rounds this call took.

        The search is :meth:`StepSearch.run`'s — the same probe choice and verdicts — but its ``measure``
        answers from samples in hand and otherwise raises :class:`Pending`. The round then holds
        what the search waits for, the samples the same verdict needs next (its interval's ends),
        and, to fill ``workers`` states, probes planned ahead: when the search wants a new probe,
        ``workers`` states splitting the open intervals (the one searched now first, then the
        rest of the stack, each slot to the interval with the largest parts) into equal expected
        cost (:func:`split_points`). Measured, they cost nothing, so the search walks through them
        without waiting. ``workers=1`` makes exactly :meth:`StepSearch.run`'s probes, one per round.
        ``search(measure)``: the search run with ``measure`` in place of its own."""
        workers = max(1, workers)
        s = self.search
        ready = s.ready

        def take(i: int, count: int) -> list[float]:
            got = ready.get(i, [])
            if len(got) >= count:
                ready[i] = got[count:]
                return got[:count]
            raise Pending(i, count - len(got))

        rounds = 0
        while True:
            try:
                return search(take), rounds
            except Pending as e:
                reqs = self.plan_round(e, workers)
                got = measure_many(reqs)
                rounds += 1
                s.rounds += 1
                for i in reqs:
                    new = got.get(i)
                    if new is None:
                        s.failed.setdefault(i, "untestable")
                        ready.pop(i, None)
                    else:
                        ready.setdefault(i, []).extend(new)


    def plan_round(self, e: Pending, workers: int) -> dict[int, int]:
        """The requests of the next round ({state: samples}) for a search stopped at ``e``."""
        s = self.search
        reqs = {e.state: e.count}
        for i, total in e.ends.items():
            have = len(s.samples.get(i, ())) + len(s.ready.get(i, ()))
            if len(reqs) < workers and i not in reqs and i not in s.failed and total > have:
                reqs[i] = total - have
        if workers == 1:
            return reqs
        need = None
        if e.probe == e.state and not s.samples.get(e.state) and not s.ready.get(e.state):
            del reqs[e.state]  # a new probe: the plan picks the round's new states (the search follows)
            need = e.state
        typical = self.typical()
        for i in self.plan_ahead(workers - len(reqs), set(reqs), need):
            reqs[i] = typical
        if need is not None and e.interval is not None and not any(e.interval[0] < i < e.interval[1] for i in reqs):
            reqs[need] = e.count  # the plan put nothing where the search waits: what it asked for
        reqs.update(self.top_ups(workers - len(reqs), set(reqs)))
        # slots left: states measured ahead, not yet judged, get the samples a verdict usually takes
        for i in sorted(s.ready, key=lambda i: -len(s.ready[i])):
            have = len(s.samples.get(i, ())) + len(s.ready[i])
            if len(reqs) < workers and i not in reqs and i not in s.failed and i not in s.verdicts \
                    and have < typical:
                reqs[i] = typical - have
        return reqs or {e.state: e.count}

    def typical(self) -> int:
        """How many samples a verdict took so far (the median; --repeats before the first): a probe
        measured ahead gets as many at once, so its verdict need not wait for rounds of repeats."""
        s = self.search
        used = sorted(len(s.samples.get(i, ())) for i, j in s.verdicts.items()
                      if j.level in (Level.LOW, Level.HIGH, Level.NEITHER) and s.samples.get(i))
        return min(max(s.repeats, used[len(used) // 2] if used else 0, self.predicted()), s.max_repeats)

    def predicted(self) -> int:
        """The samples a verdict in the open intervals is expected to need (:func:`verdict_samples`,
        on the noise so far and the levels of each interval's ends); --repeats when nothing is known."""
        s = self.search
        key = (sum(len(v) for v in s.samples.values()), tuple(s.stack))
        if self._predicted is not None and self._predicted[0] == key:
            return self._predicted[1]
        sigma, dof = s.noise()
        delta = s.delta(sigma)
        need = s.repeats
        for a, b, _ in s.stack:
            x, y = s.ref(a), s.ref(b)
            if x and y:
                need = max(need, verdict_samples(location(x), location(y), sigma, dof, delta, s.repeats,
                                                 s.max_repeats))
        self._predicted = (key, need)
        return need

    def plan_ahead(self, k: int, exclude: set[int], need: int | None = None) -> list[int]:
        """Up to ``k`` new states to measure ahead, shared between every open gap of every open
        interval (:meth:`open_gaps`: what earlier rounds measured, judged or not, already splits
        the intervals, and only the gaps whose two sides differ can hold a step), each slot to the
        gap whose largest part is largest (:func:`share_slots`), spread over it by
        :func:`split_points`. ``need``: the new state the search waits on; its gap gets a state
        first."""
        s = self.search
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
                costs = {i - a: s.cost(i) for i in range(a + 1, b) if i - a not in sp.skip}
                out += [a + x for x in split_points(b - a + 1, want, sp.skip, costs)]
        return out

    def top_ups(self, k: int, exclude: Iterable[int] = ()) -> dict[int, int]:
        """Up to ``k`` more-samples requests ({state: count}) for the ends of the open intervals
        that have fewer than :meth:`typical` samples of their own (with those measured ahead): a
        verdict in an interval takes its ends to as many samples as its probe, so a round with
        slots left measures them now instead of a round of their own later."""
        s = self.search
        typical, exclude = self.typical(), set(exclude)
        out: dict[int, int] = {}
        for a, b, _ in reversed(s.stack):
            for i in (a, b):
                have = len(s.samples.get(i, ())) + len(s.ready.get(i, ()))
                if len(out) < k and i not in out and i not in exclude and i not in s.failed and have < typical:
                    out[i] = typical - have
        return out

    def provisional(self, i: int) -> list[float]:
        """State ``i``'s samples as a round planner sees them: judged (its level's pooled samples)
        or measured ahead and not judged yet (its own, those in hand and those measured ahead)."""
        s = self.search
        if i in s.verdicts or i in (0, s.n - 1):
            return s.ref(i) + list(s.ready.get(i, ()))
        return list(s.samples.get(i, ())) + list(s.ready.get(i, ()))

    def open_gaps(self, exclude: Iterable[int] = (), need: int | None = None) -> list[_Span]:
        """The gaps that may still hold a step, for planning a round: each open interval of the
        search cut at every state measured inside it (judged or measured ahead); a gap is open
        unless its two sides' samples are at the same level (:func:`same_level`: closer than half
        the smallest step searched for). The gap the search
        waits on (holding ``need``) is open whatever its sides, with ``want`` 1; ``room``: the states
        left to probe in a gap."""
        s = self.search
        if not s.stack:
            return []
        exclude = set(exclude)
        sigma, _ = s.noise()
        delta = s.delta(sigma)
        out: list[_Span] = []
        for a, b, _ in reversed(s.stack):  # the interval searched now first
            cuts = [a] + [i for i in range(a + 1, b) if i not in s.failed and
                          (s.samples.get(i) or s.ready.get(i))] + [b]
            for p, q in zip(cuts, cuts[1:], strict=False):
                skip = {i - p for i in range(p + 1, q) if i in s.failed or i in s.unsure or i in exclude}
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
