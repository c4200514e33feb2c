"""The false rate of a window's ends' paired verdict (hourly.analysis.judges.paired: ``ends_paired``,
``ends_bound``): on seeded simulations of the TPU machine's noise, ends that do not differ are said
to differ at most at the stated rate (ENDS_ALPHA) over all the verdict's looks, and a real 3 % step
is still found. The verdict is looped by the function the bisection loops it with
(hourly.analysis.judges.paired's ``compare_ends``: a look after every round from END_ROUNDS up to
--max-repeats, stopping at the first that is not unknown), the processes drawn here."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hourly.analysis.judges.paired as jp
from hourly.analysis.judges.base import JudgeOptions
from hourly.analysis.judges.metric import SEPARATION_MIN
from hourly.analysis.judges.paired import END_ROUNDS, ENDS_ALPHA, PairedMetricJudge, compare_ends, ends_bound
from hourly.analysis.process_stat import ProcessValue, selection_bound
from hourly.model import DEFAULT_MAX_REPEATS


def process(rng, level: float, n: int, sd: float, between: float) -> list[float]:
    """One process of the TPU machine's kind: its own level, bimodal samples (every other 8 % slower)."""
    m = level * math.exp(between * rng.standard_normal())
    x = m * (1 + sd * rng.standard_normal(n))
    x[int(rng.integers(2))::2] *= 1.08
    return [float(v) for v in x]


def ends(seed: int, step: float = 0.0, n: int = 12, median: bool = False,
         cap: int = DEFAULT_MAX_REPEATS) -> tuple[bool | None, int]:
    """A window's ends ``step`` apart, compared as the bisection compares them (``compare_ends``, up
    to ``cap`` rounds: --max-repeats): the outcome and the rounds it took. ``median``: one value a
    process (no choice)."""
    rng = np.random.default_rng(seed)
    sd, between = float(rng.uniform(0.04, 0.10)), float(rng.uniform(0.003, 0.01))

    def value(level: float) -> float:
        v = ProcessValue.of(process(rng, level, n, sd, between))
        return float(v) if median else v

    def rounds(count: int, earlier) -> list[dict]:
        return [{0: value(1.0), 1: value(1.0 + step)} for _ in range(count)]

    got = compare_ends(PairedMetricJudge(JudgeOptions(max_repeats=cap)), rounds, 0, 1, cap=cap, min_change=0.02)
    return got.outcome, len(got.blocks)


def test_the_ends_are_looked_at_after_every_round_from_the_first_rounds_up_to_the_cap():
    """compare_ends' schedule, the bisection's: max(END_ROUNDS, --repeats) rounds first, then one
    round a look, the last look at the cap; ends that never run together are compared on nothing
    (outcome None, zero rounds: the drive says which end has no metric)."""
    asked: list[tuple[int, int]] = []

    def failing(count: int, earlier) -> list[dict]:
        asked.append((count, len(earlier)))
        return [{0: 1.0, 1: None} for _ in range(count)]

    got = compare_ends(PairedMetricJudge(JudgeOptions(max_repeats=8)), failing, 0, 1, cap=8, min_change=0.02)
    assert (got.outcome, got.paired.rounds, len(got.blocks)) == (None, 0, 8)
    assert asked == [(END_ROUNDS, 0)] + [(1, r) for r in range(END_ROUNDS, 8)]
    asked.clear()
    got = compare_ends(PairedMetricJudge(JudgeOptions(max_repeats=8)), failing, 0, 1, cap=8, min_change=0.02,
                       repeats=6)
    assert asked == [(6, 0), (1, 6), (1, 7)]
    asked.clear()
    rng = np.random.default_rng(0)

    def apart(count: int, earlier) -> list[dict]:
        asked.append((count, len(earlier)))
        return [{0: 1.0 + 0.01 * rng.standard_normal(), 1: 1.5 + 0.01 * rng.standard_normal()} for _ in range(count)]

    got = compare_ends(PairedMetricJudge(), apart, 0, 1, cap=DEFAULT_MAX_REPEATS, min_change=0.02)
    assert got.outcome is True and got.paired.rounds == len(got.blocks) == sum(c for c, _ in asked)
    assert asked[0] == (END_ROUNDS, 0) and all(c == 1 for c, _ in asked[1:])
    assert got.words.startswith("+49.5 %, paired over 4 rounds"), got.words


def before(monkeypatch) -> None:
    """The rule hourly had: 3 standard errors at every look (raised for the best of several)."""
    monkeypatch.setattr(jp, "ends_bound", lambda k, dof, cap, r: selection_bound(SEPARATION_MIN, k, dof))


def test_the_bound_is_a_t_quantile_of_the_looks_share_of_the_rate():
    from scipy import stats
    cap = DEFAULT_MAX_REPEATS
    looks = cap - END_ROUNDS + 1
    shares = [ENDS_ALPHA * ((k / looks) ** 2 - ((k - 1) / looks) ** 2) for k in range(1, looks + 1)]
    assert math.isclose(sum(shares), ENDS_ALPHA)  # the looks together spend exactly the stated rate
    r = END_ROUNDS + 7
    assert math.isclose(ends_bound(1, r - 1, cap, r), stats.t.isf(shares[7] / 2, r - 1))
    assert math.isclose(ends_bound(3, r - 1, cap, r), stats.t.isf(shares[7] / 6, r - 1))  # shared by 3 statistics
    bounds = [ends_bound(1, r - 1, cap, r) for r in range(END_ROUNDS, cap + 1)]
    assert bounds == sorted(bounds, reverse=True) and bounds[0] > 30 and 3.5 < bounds[-1] < 4.5
    assert ends_bound(1, 9, 40, 10) > ends_bound(1, 9, 20, 10)  # more looks to come: a smaller share now
    assert ends_bound(1, 1000, END_ROUNDS, END_ROUNDS) >= SEPARATION_MIN  # never below the unpaired check


def test_ends_that_do_not_differ_are_said_to_differ_rarely():
    """60 seeded null windows, 12 samples a process, the statistic chosen on the ends, up to 10
    rounds: at a stated 1 % over the looks, at most 2 (the rule before: 7 of these 60)."""
    said = sum(ends(seed, cap=10)[0] is True for seed in range(60))
    assert said <= 2, said


def test_the_rule_before_said_differ_on_ends_that_do_not(monkeypatch):
    """The same 60 windows under the rule before: many more "differ" than the stated rate allows."""
    before(monkeypatch)
    said = sum(ends(seed, cap=10)[0] is True for seed in range(60))
    assert said >= 5, said


def test_a_real_3_percent_step_is_still_found():
    """Ends 3 % apart, ~100 samples a process (what hourly chooses on this noise): every one of 20
    seeded windows is said to differ within --max-repeats rounds, most well before."""
    got = [ends(seed, step=0.03, n=96) for seed in range(20)]
    assert all(o is True for o, _ in got), got
    rounds = sorted(r for _, r in got)
    assert rounds[len(rounds) // 2] <= 12, rounds


def test_ends_that_differ_clearly_still_differ():
    got = [ends(seed, step=0.10, n=96) for seed in range(5)]
    assert all(o is True for o, _ in got), got


@pytest.mark.slow
def test_on_many_null_windows_the_rate_holds_at_the_stated_level():
    """600 seeded null windows each way (the statistic chosen, the median alone): "differ" at most
    the stated 1 % plus its binomial slack (k ≤ 12 of 600, where 1 % gives 6 on average)."""
    for median in (False, True):
        said = sum(ends(seed, median=median)[0] is True for seed in range(600))
        assert said <= 12, (median, said)


# -- the probes after the ends: what they find does not rest on how many rounds the ends took ---------

def two_steps(seed: int, states: int = 11, noise: float = 0.007) -> tuple[list[tuple[int, int]], int]:
    """tests/test_bisect.py's two-culprit window in process: 11 states, -7 % at state 3 and -2 % (the
    --min-change) at state 9, 0.7 % noise a process, one value a process; the ends compared in rounds
    as the bisection compares them, then the search, on to the rest of the window while it says a step
    is left. The ends' processes are drawn from one stream and the probes' from another, so that two
    rules for the ends meet the same probe noise. The regressions pinned, and the ends' rounds."""
    from hourly.analysis.paired import round_order
    from hourly.analysis.step_search import StepSearch
    from hourly.model import BISECT_MIN_CHANGE
    ends_rng, probes_rng = np.random.default_rng(seed), np.random.default_rng(10_000 + seed)
    judge = PairedMetricJudge()

    def level(i: int) -> float:
        return 577.1 * (0.93 if i >= 3 else 1.0) * (0.98 if i >= 9 else 1.0)

    def rounds(rng):
        done = [0]  # rounds so far: each round's order alternates, as the bisection's do

        def measure(sts: list[int], count: int, stop_on: int | None) -> list[dict]:
            out = [{st: level(st) * (1 + noise * rng.standard_normal()) for st in round_order(sts, done[0] + k)}
                   for k in range(count)]
            done[0] += count
            return out
        return measure

    ends_rounds = rounds(ends_rng)
    got = compare_ends(judge, lambda count, earlier: ends_rounds([0, states - 1], count, None), 0, states - 1,
                       cap=DEFAULT_MAX_REPEATS, min_change=BISECT_MIN_CHANGE)
    outcome, p = got.outcome, got.paired
    assert outcome is True, seed  # a -9 % window in 0.7 % noise
    search = StepSearch(states, lambda i, c: None, max_repeats=DEFAULT_MAX_REPEATS, min_change=BISECT_MIN_CHANGE,
                        higher_is_better=True, judge=judge, rounds=rounds(probes_rng), crash_windows=True,
                        stop_at_regression=True)
    search.seed(0, states - 1, p)
    search.run()
    while search.more_after:
        search.run()
    return [(s.lo, s.hi) for s in search.steps if s.regression(True)], len(got.blocks)


@pytest.mark.parametrize("seeds", [pytest.param(range(0, 40, 4), id="quick"),
                                   pytest.param([s for s in range(40) if s % 4], id="rest", marks=pytest.mark.slow)])
def test_the_ends_rule_leaves_the_probes_finding_what_they_found(monkeypatch, seeds):
    """The ends take more rounds under the stated rate (4-6 here, 3 before), and their rounds seed
    the probes' noise; on the same probe noise the probes pin the same steps under either rule. A
    probe misses the -2 % step beside the -7 % one in about 1 of 20 of these windows either way (a
    probe 2 % from the later end taken at its level: hourly.analysis.judges.paired NEITHER_BOUND;
    1 of 10 by the 3:1 bound before), which is why the real-process test's single seed could fail under one rule and pass under the
    other (the seeded benchmark draws each run's noise by its count: more ends' runs, other draws)."""
    now = {s: two_steps(s) for s in seeds}
    before(monkeypatch)
    was = {s: two_steps(s) for s in seeds}
    assert all(was[s][1] == END_ROUNDS for s in seeds)
    assert sum(now[s][1] for s in seeds) > sum(was[s][1] for s in seeds)  # the stated rate costs the ends rounds
    same = sum(now[s][0] == was[s][0] for s in seeds)
    assert same >= len(seeds) - 1, {s: (now[s], was[s]) for s in seeds}
    assert sum(now[s][0] == BOTH for s in seeds) >= 0.85 * len(seeds), now


BOTH = [(2, 3), (8, 9)]  # two_steps' two regressions, as (last good, first bad)


def test_a_step_of_min_change_beside_a_larger_one_is_found_on_the_quick_seeds():
    """A probe is taken at an end's level only when that end is at least as likely as "a level of
    its own" (NEITHER_BOUND 0): on these 10 windows both steps are pinned every time; taking the
    end unless "neither" was likelier by 3:1 lost the -2 % step in one (seed 32: the first probe,
    2 % from the later end, read close to it and was taken at its level)."""
    got = {s: two_steps(s)[0] for s in range(0, 40, 4)}
    assert all(g == BOTH for g in got.values()), got


@pytest.mark.slow
def test_a_step_of_min_change_beside_a_larger_one_is_found_in_most_windows(monkeypatch):
    """100 windows: both steps pinned in at least 92 (94 measured); by the 3:1 bound in fewer (90),
    and no wrong step either way."""
    now = [two_steps(s)[0] for s in range(100)]
    monkeypatch.setattr(jp, "NEITHER_BOUND", -math.log(3.0))
    was = [two_steps(s)[0] for s in range(100)]
    assert sum(g == BOTH for g in now) >= 92, now
    assert sum(g == BOTH for g in was) < sum(g == BOTH for g in now)
    assert all(set(g) <= set(BOTH) for g in now + was)
