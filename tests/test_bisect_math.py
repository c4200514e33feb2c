"""The pure parts of bisection: states, probe choice, verdicts."""

import math
from itertools import pairwise

import numpy as np
import pytest

from hourly.analysis.bisection import (
    COST_BUILD,
    COST_CACHED,
    COST_MEASURED,
    Verdict,
    bounds,
    candidate_states,
    exit_transitions,
    next_probe,
    plain_bisection_probes,
    step_commits,
)
from hourly.analysis.judges import ExitJudge, FlakyJudge, MetricJudge
from hourly.analysis.samples import separation
from hourly.errors import UserError
from hourly.measure.resolve import Pair

H = 3600


def walk(name, times):
    """A first-parent walk (newest first) of commits named name0, name1, ... at the given times."""
    return [(f"{name}{i}", t) for i, t in reversed(list(enumerate(times)))]


def test_states_merge_both_histories_in_time_order():
    walks = {"xla": walk("x", [0, 10 * H, 12 * H, 15 * H]), "jax": walk("j", [0, 11 * H, 14 * H])}
    states = candidate_states(walks, 9 * H, 16 * H)
    assert [s.pair for s in states] == [Pair("x0", "j0"), Pair("x1", "j0"), Pair("x1", "j1"), Pair("x2", "j1"),
                                        Pair("x2", "j2"), Pair("x3", "j2")]
    # each step moves exactly one commit of one repo
    for a, b in pairwise(states):
        moved = step_commits(walks, a.pair, b.pair)
        assert sum(len(v) for v in moved.values()) == 1


def test_states_follow_rev_list_when_times_go_backwards():
    # x2 was committed with an earlier time than x1 (rebased); rev-list --before never shows x1 alone
    walks = {"xla": walk("x", [0, 10 * H, 9 * H + 1800, 12 * H]), "jax": walk("j", [0])}
    states = candidate_states(walks, 8 * H, 13 * H)
    assert [s.pair.xla for s in states] == ["x0", "x2", "x3"]
    assert step_commits(walks, states[0].pair, states[1].pair)["xla"] == ["x1", "x2"]


def test_simultaneous_commits_move_both_repos_in_one_step():
    walks = {"xla": walk("x", [0, 10 * H]), "jax": walk("j", [0, 10 * H])}
    states = candidate_states(walks, 5 * H, 11 * H)
    assert [s.pair for s in states] == [Pair("x0", "j0"), Pair("x1", "j1")]


def test_bounds_and_probe_choice_are_a_bisection():
    n = 65
    for culprit in (1, 17, 32, 64):
        verdicts = {}
        probes = 0
        while (i := next_probe(n, verdicts)) is not None:
            verdicts[i] = Verdict.GOOD if i < culprit else Verdict.BAD
            probes += 1
        b = bounds(n, verdicts)
        assert (b.lo, b.hi) == (culprit - 1, culprit)
        assert probes <= math.ceil(math.log2(n - 1))


def test_a_free_state_near_the_middle_beats_a_build_at_the_middle():
    costs = {i: COST_BUILD for i in range(1, 32)}
    costs[13] = COST_MEASURED
    assert next_probe(33, {}, costs) == 13
    costs[13] = COST_BUILD
    assert next_probe(33, {}, costs) == 16
    costs[3] = COST_CACHED  # runs only: even a lopsided split is worth more than it costs
    assert next_probe(33, {}, costs) == 3


def test_skipped_states_are_passed_over_and_leave_a_range():
    verdicts = {4: Verdict.SKIP}
    assert next_probe(9, verdicts) in (3, 5)
    verdicts = {1: Verdict.GOOD, 2: Verdict.SKIP, 3: Verdict.SKIP, 4: Verdict.BAD}
    assert next_probe(9, verdicts) is None
    b = bounds(9, verdicts)
    assert (b.lo, b.hi, b.adjacent) == (1, 4, False)


def test_plain_bisection_count():
    assert plain_bisection_probes(2, 1) == 0
    assert plain_bisection_probes(17, 9) == 4


def test_exit_verdicts_like_git_bisect_run():
    assert ExitJudge.exit_verdict([0, 0]) is Verdict.GOOD
    assert ExitJudge.exit_verdict([0, 1]) is Verdict.BAD
    assert ExitJudge.exit_verdict([125]) is Verdict.SKIP
    assert ExitJudge.exit_verdict([None]) is Verdict.BAD  # timed out
    assert ExitJudge.exit_verdict([]) is Verdict.SKIP
    g, b, s = Verdict.GOOD, Verdict.BAD, Verdict.SKIP
    assert exit_transitions([g, g, s, b, b, g, None, b]) == [(1, 3), (5, 7)]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_classify_clear_cases(rng):
    good = list(rng.normal(100, 1, 5))
    bad = list(rng.normal(90, 1, 5))
    assert MetricJudge.classify(list(rng.normal(100, 1, 3)), good, bad).verdict is Verdict.GOOD
    assert MetricJudge.classify(list(rng.normal(90, 1, 3)), good, bad).verdict is Verdict.BAD
    assert separation(good, bad) > 10
    assert MetricJudge.worse(good, bad, higher_is_better=True) and not MetricJudge.worse(good, bad, higher_is_better=False)


def test_classify_noisy_probe_is_unsure_until_enough_samples(rng):
    good = list(rng.normal(100, 3, 3))
    bad = list(rng.normal(94, 3, 3))
    one = MetricJudge.classify([(np.mean(good) + np.mean(bad)) / 2], good, bad)
    assert one.verdict is Verdict.UNSURE
    # the bisector measures the ends as often as the probe
    good, bad = good + list(rng.normal(100, 3, 13)), bad + list(rng.normal(94, 3, 13))
    many = MetricJudge.classify(list(rng.normal(94, 3, 16)), good, bad)
    assert many.verdict is Verdict.BAD


def test_classify_between_the_ends_means_a_second_step(rng):
    good = list(rng.normal(100, 0.2, 3))
    bad = list(rng.normal(85, 0.2, 3))
    c = MetricJudge.classify(list(rng.normal(93, 0.2, 3)), good, bad)
    assert c.verdict is Verdict.BAD and c.between
    beyond = MetricJudge.classify(list(rng.normal(80, 0.2, 3)), good, bad)
    assert beyond.verdict is Verdict.BAD and not beyond.between
    better = MetricJudge.classify(list(rng.normal(104, 0.2, 3)), good, bad)
    assert better.verdict is Verdict.GOOD


def split(count: int, quick: int, name: str):
    """A sweep of ``count`` seeded draws as two cases: the first ``quick`` in the quick run, the
    rest slow. Each draw has its own seed, so the two cases together are the whole sweep, run once
    in CI; each case keeps the sweep's rates, so both holding implies the whole sweep's."""
    return pytest.mark.parametrize(name, [pytest.param(range(quick), id="quick"),
                                          pytest.param(range(quick, count), id="rest", marks=pytest.mark.slow)])


# quick: the [quick] case covers the same rates on the first 80 of the 400 trials
@split(400, 80, "draws")
def test_classifier_error_rate_on_many_draws(draws):
    """Sequential sampling as the bisector does it: start at 1 sample, double while unsure (the
    ends as often as the probe), cap 16. 400 trials (the two cases together), each its own seed."""
    wrong = unsure = 0
    trials = len(draws)
    for k in draws:
        rng = np.random.default_rng([7, k])
        good = list(rng.normal(100, 2, 3))
        bad = list(rng.normal(96, 2, 3))
        truth = Verdict.GOOD if k % 2 else Verdict.BAD
        mean = 100 if truth is Verdict.GOOD else 96
        samples = list(rng.normal(mean, 2, 1))
        while True:
            c = MetricJudge.classify(samples, good, bad)
            if c.verdict is not Verdict.UNSURE or len(samples) >= 16:
                break
            samples += list(rng.normal(mean, 2, len(samples)))
            good += list(rng.normal(100, 2, max(0, len(samples) - len(good))))  # the ends grow too
            bad += list(rng.normal(96, 2, max(0, len(samples) - len(bad))))
        if c.verdict is Verdict.UNSURE:
            unsure += 1
        elif c.verdict is not truth:
            wrong += 1
    assert wrong / trials < 0.05
    # medians cost samples on Gaussian noise (64 % of the mean's efficiency): more stay unsure at 16
    assert unsure / trials < 0.4


# -- every step of a window: StepSearch ---------------------------------------------------------

from hourly.analysis.bisection import Level
from hourly.analysis.judges.metric import resolvable_change
from hourly.analysis.step_search import StepSearch


def levels(n, steps, base=1000.0):
    """Level of each of n states with (first state at the new level, factor) steps."""
    out = []
    for i in range(n):
        v = base
        for pos, f in steps:
            if i >= pos:
                v *= f
        out.append(v)
    return out


def simulate(n, steps, noise, seed, **kw):
    """StepSearch against simulated measurements: (steps found, distinct states measured, runs)."""
    rng = np.random.default_rng(seed)
    lv = levels(n, steps)
    measured, runs = set(), [0]

    def measure(i, count):
        measured.add(i)
        runs[0] += count
        return list(lv[i] * (1 + noise * rng.standard_normal(count)))
    search = StepSearch(n, measure, **kw)
    search.get(0, 3), search.get(n - 1, 3)
    return search.run(), len(measured), runs[0]


def test_judge_three_ways():
    low = [100.2, 99.8, 100.1, 99.9, 100.0, 100.3, 99.7, 100.0]
    high = [91.1, 90.9, 91.0, 91.2, 90.8, 91.0, 91.1, 90.9]
    at = lambda m: [m - 0.2, m + 0.1, m + 0.2, m - 0.1, m]
    assert MetricJudge.level(at(100.0), low, high, 0.3, 30, 1.5).level is Level.LOW
    assert MetricJudge.level(at(91.0), low, high, 0.3, 30, 1.5).level is Level.HIGH
    # 2 below the earlier end, 7 above the later: a step on each side
    assert MetricJudge.level(at(98.0), low, high, 0.3, 30, 1.5).level is Level.NEITHER
    # beyond the later end (a regression, then an improvement back up to it)
    assert MetricJudge.level(at(87.0), low, high, 0.3, 30, 1.5).level is Level.NEITHER
    # one sample at 0.7 noise cannot tell 1.5 from 0; out of repeats: the nearer end by 20:1, else skip
    assert MetricJudge.level([99.0], low, high, 0.7, 30, 1.5).level is Level.UNSURE
    assert MetricJudge.level([99.2], low, high, 0.7, 30, 1.5, final=True).level is Level.LOW
    near = [x + 7 for x in high]  # ends 2 apart: halfway is neither's nor either end's
    assert MetricJudge.level([99.0], low, near, 0.7, 30, 1.5, final=True).level is Level.SKIP


def test_differ_and_the_resolvable_change():
    same = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1]
    assert MetricJudge.differ(same, [100.1, 99.9, 100.3, 99.7, 100.0, 100.2], 0.3, 10, 2.0) is False
    assert MetricJudge.differ(same, [97.9, 98.1, 98.0, 97.7, 98.2, 98.0], 0.3, 10, 2.0) is True
    assert MetricJudge.differ(same, [99.0], 0.3, 10, 2.0) is None
    # what --max-repeats can resolve shrinks as 1/sqrt(repeats)
    assert resolvable_change(0.7, 40) == pytest.approx(resolvable_change(0.7, 10) / 2)


# Seeded sweeps are split in two: the quick run takes every tenth (or fifth) seed, the slow set the
# rest, so that CI still runs every seed once and no seed twice.
TENTH = list(range(0, 100, 10))
# quick: the [tenth] case covers the same search on seeds 0, 10, ..., 90
@pytest.mark.parametrize("seeds", [pytest.param(TENTH, id="tenth"),
                                   pytest.param([s for s in range(100) if s not in TENTH], id="rest",
                                                marks=pytest.mark.slow)])
def test_two_steps_one_small_under_real_noise_every_seed(seeds):
    """The issue's window: -7 % and -2 % among 107 states, 0.7 % noise per run, 100 seeds (the two
    cases together)."""
    for seed in seeds:
        steps, builds, runs = simulate(107, [(31, 0.93), (77, 0.98)], 0.007, seed)
        assert [(s.lo, s.hi) for s in steps] == [(30, 31), (76, 77)], seed
        assert builds <= math.ceil(math.log2(math.comb(106, 2))) + 2 + 2 + 3, (seed, builds)


# quick: the [fifth] case covers the same search on seeds 0, 5, 10, 15 and the stop at the first regression
@pytest.mark.parametrize("seeds", [pytest.param(range(0, 20, 5), id="fifth"),
                                   pytest.param([s for s in range(20) if s % 5], id="rest", marks=pytest.mark.slow)])
def test_compensating_steps_are_both_found(seeds):
    # a regression, then an improvement that wins back most of it: the ends differ by little
    # (seeds 0..19, the two cases together)
    for seed in seeds:
        steps, _, _ = simulate(64, [(20, 0.92), (45, 1.06)], 0.005, seed)
        assert [(s.lo, s.hi, s.regression(True)) for s in steps] == [(19, 20, True), (44, 45, False)], seed
    # stopping at the first regression says the rest of the window holds a step
    rng = np.random.default_rng(1)
    lv = levels(64, [(20, 0.92), (45, 1.06)])
    search = StepSearch(64, lambda i, c: list(lv[i] * (1 + 0.005 * rng.standard_normal(c))), stop_at_regression=True)
    assert [(s.lo, s.hi) for s in search.run()] == [(19, 20)] and search.more_after


def test_noise_free_builds_stay_within_the_limit():
    """ceil(log2 C(N-1, k)) + k + 2 builds for k steps among N states (one commit each)."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(8, 160))
        k = int(rng.integers(1, 4))
        pos = sorted(int(p) for p in rng.choice(np.arange(1, n), size=k, replace=False))
        steps = [(p, float(rng.choice([0.9, 0.95, 0.97]))) for p in pos]
        found, builds, _ = simulate(n, steps, 0.0, 0)
        assert [(s.lo, s.hi) for s in found] == [(p - 1, p) for p in pos], (n, steps)
        assert builds <= math.ceil(math.log2(math.comb(n - 1, k))) + k + 2, (n, steps, builds)


def test_untestable_states_leave_a_range_and_a_step_below_min_change_is_not_searched():
    lv = levels(40, [(20, 0.95)])
    search = StepSearch(40, lambda i, c: None if i in (19, 20, 21) else [lv[i]] * c,
                        failed={18: "build failed"})
    (step,) = search.run()
    assert (step.lo, step.hi) == (17, 22) and not step.adjacent
    # a 0.5 % step beside a 6 % one: with --min-change 2 % only the 6 % step is pinned
    steps, _, _ = simulate(50, [(10, 0.995), (30, 0.94)], 0.001, 0, min_change=0.02)
    assert [(s.lo, s.hi) for s in steps] == [(29, 30)]


# -- rounds: W states at once (StepSearch.run_rounds, plan_probes) ------------------------------

from hourly.analysis.bisection import plan_probes, split_points


def _oracle(n: int, culprits: list[int], noise: float = 0.0, seed: int = 0):
    """Levels that rise 10 % at each culprit state; samples exact, or with seeded relative noise."""
    lv = [1.1 ** sum(i >= c for c in culprits) for i in range(n)]
    rng = np.random.default_rng(seed)
    return lambda i, c: list(lv[i] * (1 + noise * rng.standard_normal(c))) if noise else [lv[i]] * c


def _search(n, f, measure=None, **kw):
    return StepSearch(n, measure or f, known={0: f(0, 3), n - 1: f(n - 1, 3)}, higher_is_better=False, **kw)


def _rounds(n, f, workers):
    built: set[int] = set()

    def many(reqs):
        assert 0 < len(reqs) <= workers
        built.update(reqs)
        return {i: f(i, c) for i, c in reqs.items()}
    steps, rounds = _search(n, f).run_rounds(many, workers)
    return [(s.lo, s.hi) for s in steps], rounds, len(built)


@pytest.mark.parametrize("n", [8, 13, 40, 150, 400])
@pytest.mark.parametrize("parts", [(1, 3), (1, 4, 2, 3)])
def test_rounds_find_the_sequential_steps_in_about_log_w_plus_1_rounds(n, parts):
    culprits = [max(1, n * parts[0] // parts[1])] + ([max(2, n * parts[2] // parts[3])] if len(parts) > 2 else [])
    culprits = sorted(set(culprits))
    f = _oracle(n, culprits)
    probed: list[int] = []
    seq = [(s.lo, s.hi) for s in _search(n, f, lambda i, c: (probed.append(i), f(i, c))[1]).run()]
    assert seq == [(c - 1, c) for c in culprits]
    got = {w: _rounds(n, f, w) for w in (1, 2, 4, 8)}
    for w, (steps, _, _) in got.items():
        assert steps == seq, w
    # W=1 is the sequential search: the same states, one round each
    assert got[1][2] == len(set(probed)) and got[1][1] == len(probed)
    if len(culprits) == 1:
        for w, (_, rounds, _) in got.items():  # about log_(W+1) of the window, plus a round or two
            assert rounds <= math.ceil(math.log(n - 1, w + 1)) + 2, (w, rounds)
        if n >= 40:
            assert got[8][1] < got[4][1] < got[1][1]
    else:
        assert got[8][1] <= got[2][1] < got[1][1]


# quick: seed 2 covers the same rounds against the same sequential search; seeds 0, 1 and 3 are slow
@pytest.mark.parametrize("seed", [pytest.param(s, marks=[pytest.mark.slow] if s != 2 else []) for s in range(4)])
def test_rounds_under_noise_give_the_sequential_steps_in_fewer_rounds(seed):
    n = 120
    f = _oracle(n, [37, 90], noise=0.01, seed=seed)
    seq = [(s.lo, s.hi) for s in _search(n, f).run()]
    assert seq == [(36, 37), (89, 90)]
    one = _rounds(n, _oracle(n, [37, 90], noise=0.01, seed=seed), 1)
    four = _rounds(n, _oracle(n, [37, 90], noise=0.01, seed=seed), 4)
    assert one[0] == four[0] == seq
    assert four[1] < one[1]


def test_split_points_cut_equal_parts_and_k1_is_next_probe():
    assert split_points(13, 3) == [3, 6, 9]
    assert split_points(10, 2) == [3, 6]
    assert split_points(5, 8) == [1, 2, 3]  # no more than the states inside
    assert split_points(13, 2, fixed=[6]) == [3, 9]
    assert split_points(13, 1, costs={4: 0.05}) == [4]  # a cached state near the middle beats a build at it
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(3, 60))
        verdicts = {int(i): Verdict.SKIP for i in rng.integers(1, n - 1, 3)}
        costs = {int(i): float(rng.choice([0.0, 0.05, 0.1, 1.0])) for i in range(1, n - 1)}
        one = plan_probes(n, verdicts, 1, costs)
        assert one == ([] if next_probe(n, verdicts, costs) is None else [next_probe(n, verdicts, costs)])


@pytest.mark.parametrize("n", [9, 57, 400])
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_k_ary_exit_search_gives_the_sequential_answer(n, k):
    """Exit mode's search (good → bad by exit status, untestable states skipped), k states a round."""
    rng = np.random.default_rng(n * 10 + k)
    for _ in range(20):
        first_bad = int(rng.integers(1, n))
        skips = {int(i) for i in rng.integers(1, n - 1, max(1, n // 10))}

        def verdict(i, skips=skips, first_bad=first_bad):
            return Verdict.SKIP if i in skips else Verdict.BAD if i >= first_bad else Verdict.GOOD
        seq: dict[int, Verdict] = {}
        while (i := next_probe(n, seq)) is not None:
            seq[i] = verdict(i)
        par: dict[int, Verdict] = {}
        rounds = 0
        while probes := plan_probes(n, par, k):
            assert len(probes) <= k
            par.update({i: verdict(i) for i in probes})
            rounds += 1
        assert bounds(n, par) == bounds(n, seq)
        if k == 1:
            assert par == seq and rounds == len(seq)


# -- real benchmark noise: a slow first run per state, a few slow runs, heavy tails (issue 24) --------

from hourly.analysis.samples import location, pooled_sigma


def real_runs(level, rng, count, first, noise=0.007, slow_rate=0.05, higher_is_better=True):
    """``count`` runs of a state at ``level`` as real benchmarks give them: Student-t (3 dof) noise
    of scale ``noise``, a slow run now and then (10–50 % slower, rate ``slow_rate``) and, when
    ``first`` (the state was just installed), a first run 25–90 % slower than the rest."""
    out = []
    for k in range(count):
        slow = 1.0 + noise * float(rng.standard_t(3))
        if rng.random() < slow_rate:
            slow *= 1 + rng.uniform(0.1, 0.5)
        if first and k == 0:
            slow *= 1 + rng.uniform(0.25, 0.9)
        out.append(level / slow if higher_is_better else level * slow)
    return out


def test_location_and_scale_are_not_pulled_by_slow_runs():
    clean = [100.0, 100.4, 99.6, 100.2, 99.8, 100.1, 99.9, 100.0]
    slow = clean[:-2] + [60.0, 70.0]  # two wild runs of eight
    assert abs(location(slow) - 100.0) < 0.3 and abs(float(np.mean(slow)) - 100.0) > 7
    s_clean, dof = pooled_sigma([clean])
    s_slow, _ = pooled_sigma([slow])
    assert dof == 7 and 0.15 < s_clean < 0.5 and s_slow < 4 * s_clean  # the SD grows 50-fold
    assert float(np.std(slow, ddof=1)) > 40 * s_clean
    # consistent for Gaussian noise at every group size: pooled groups of 2, 3 and 10
    rng = np.random.default_rng(5)
    for size in (2, 3, 10):
        est = [pooled_sigma([rng.normal(0, 1, size) for _ in range(40)])[0] for _ in range(50)]
        assert 0.9 < float(np.mean(est)) < 1.1, size
    assert location([1.0]) == 1.0 and location([1.0, 3.0]) == 2.0


def _three_state_verdict(low_level, probe_level, high_level, rng, max_repeats=20):
    """The window search's verdict on one probe between two ends (3 states), every state's samples
    real_runs with a slow first run each."""
    lv = [low_level, probe_level, high_level]
    seen = set()

    def measure(i, count):
        first = i not in seen
        seen.add(i)
        return real_runs(lv[i], rng, count, first)
    got = {}
    search = StepSearch(3, measure, max_repeats=max_repeats, on_verdict=lambda i, j: got.setdefault(i, j))
    search.get(0, 3), search.get(2, 3)
    search.run()
    return got[1].level


# quick: the [quick] case covers the same rates on the first 60 of the 300 probes
@split(300, 60, "probes")
def test_false_verdicts_under_a_heavy_tailed_null_are_rare(probes):
    """A probe at the earlier end's level, 20 % above the later end's: judged at the later level or
    as a step of its own (a wrong culprit) in under 1 % of 300 seeded probes (the two cases
    together; now: none)."""
    levels_ = [_three_state_verdict(1000.0, 1000.0, 800.0, np.random.default_rng([24, k])) for k in probes]
    wrong = sum(v in (Level.HIGH, Level.NEITHER) for v in levels_)
    assert wrong / len(levels_) < 0.01, wrong
    assert sum(v is Level.LOW for v in levels_) / len(levels_) > 0.95


# quick: the [quick] case covers the same rates on the first 60 of the 300 probes
@split(300, 60, "probes")
def test_power_against_a_20_percent_shift_with_a_slow_first_run(probes):
    """A probe 20 % below the earlier end (at the later end's level), each state's first run 25–90 %
    slow and 8 % of runs 10–50 % slow: judged at the later level in 99 % of 300 seeded probes (the
    two cases together)."""
    levels_ = [_three_state_verdict(1000.0, 800.0, 800.0, np.random.default_rng([25, k])) for k in probes]
    assert sum(v is Level.HIGH for v in levels_) / len(levels_) >= 0.99
    assert not any(v is Level.LOW for v in levels_)


def simulate_real(n, steps, seed, noise=0.007, **kw):
    """StepSearch over a window whose benchmark behaves as real_runs (a slow first run per state)."""
    rng = np.random.default_rng(seed)
    lv = levels(n, steps)
    seen, runs = set(), [0]

    def measure(i, count):
        first = i not in seen
        seen.add(i)
        runs[0] += count
        return real_runs(lv[i], rng, count, first, noise)
    search = StepSearch(n, measure, **kw)
    search.get(0, 3), search.get(n - 1, 3)
    return search.run(), runs[0]


# quick: the [quick] case covers the same search on the first 12 of the 60 seeds
@split(60, 12, "seeds")
def test_a_window_under_real_noise_names_the_planted_commit(seeds):
    """40 states, one 5 % step planted at a random state, real_runs noise: 60 seeds (the two cases
    together). Now 60 of 60 exact (~147 runs a window); with the means and standard deviations of
    before, 1 of 60: the slow runs inflate the noise until the step is below what 20 repeats
    resolve."""
    exact = wrong = 0
    for seed in seeds:
        at = 1 + seed * 7 % 38
        found, _ = simulate_real(40, [(at, 0.95)], seed)
        regs = [s for s in found if s.after < s.before]
        exact += bool(regs) and (regs[0].lo, regs[0].hi) == (at - 1, at)
        wrong += any(s.adjacent and s.hi != at for s in regs)
    assert wrong == 0 and exact >= 0.95 * len(seeds), (exact, wrong)  # 57 of 60


def test_an_unsure_state_is_never_walked_on():
    """A state whose runs alternate between the two ends' levels stays unsure up to --max-repeats:
    it is a skip ("unsure after N samples") and the step is the range across it, never a culprit."""
    rng = np.random.default_rng(1)
    lv = {0: 100.0, 2: 90.0}
    runs = [0]

    def measure(i, count):
        if i == 1:
            runs[0] += count
            return [(100.0 if k % 2 else 90.0) + rng.normal(0, 0.1) for k in range(runs[0] - count, runs[0])]
        return list(lv[i] + rng.normal(0, 0.1, count))
    search = StepSearch(3, measure, max_repeats=12, known={0: measure(0, 3), 2: measure(2, 3)})
    steps = search.run()
    j = search.verdicts[1]
    assert j.level is Level.SKIP and j.reason.startswith("unsure after 12 samples")
    assert [(s.lo, s.hi) for s in steps] == [(0, 2)] and not steps[0].adjacent


def test_flaky_verdicts_by_failure_rate():
    failures, failure_rates, flaky_verdict = FlakyJudge.failures, FlakyJudge.failure_rates, FlakyJudge.flaky_verdict
    assert failures([0, 3, None, 125, 0]) == (2, 4)
    p0, p1 = failure_rates([0] * 10, [0, 134, 0, 0, 134, 0, 0, 0, 134, 0])
    assert (p0, p1) == (0.02, 0.3)
    assert flaky_verdict([0], p0, p1).verdict is Verdict.UNSURE  # one clean run decides nothing
    assert flaky_verdict([134, 0, 134], p0, p1).verdict is Verdict.BAD
    # sequential, seeded: states crashing in 1/3 of runs against clean ones, up to 20 runs each
    rng = np.random.default_rng(9)
    out = {True: [], False: []}
    for k in range(400):
        crashing = bool(k % 2)
        rcs = []
        while True:
            rcs.append(134 if crashing and rng.random() < 1 / 3 else 0)
            v = flaky_verdict(rcs, p0, p1).verdict
            if v is not Verdict.UNSURE or len(rcs) >= 20:
                break
        out[crashing].append((v, len(rcs)))
    wrong = sum(v is Verdict.GOOD for v, _ in out[True]) + sum(v is Verdict.BAD for v, _ in out[False])
    assert wrong == 0
    assert sum(v is Verdict.BAD for v, _ in out[True]) / 200 > 0.9
    assert all(v is Verdict.GOOD for v, _ in out[False])


# -- a step that moves both repositories, and build breaks (issue 25) ------------------------------

def test_the_chain_holds_the_mixed_state_of_a_step_moving_both_repositories():
    from hourly.analysis.bisection import timeline_bounds, with_mixed_states
    walks = {"xla": walk("x", [0, 10 * H, 12 * H]), "jax": walk("j", [0, 11 * H, 12 * H])}
    states = candidate_states(walks, 9 * H, 13 * H)
    assert [s.pair for s in states] == [Pair("x0", "j0"), Pair("x1", "j0"), Pair("x1", "j1"), Pair("x2", "j2")]
    chain = with_mixed_states(states)
    # old xla + new jax inside the step at 12:00, which moved both; every state holds the one before it
    assert [s.pair for s in chain] == [Pair("x0", "j0"), Pair("x1", "j0"), Pair("x1", "j1"), Pair("x1", "j2"),
                                       Pair("x2", "j2")]
    # the mixed state bad: the step's jax commit is first bad; good: the step is still to blame
    assert timeline_bounds(chain, states, bounds(len(chain), {3: Verdict.BAD, 2: Verdict.GOOD})) == \
        timeline_bounds(chain, states, bounds(len(chain), {3: Verdict.GOOD})) == bounds(len(states), {2: Verdict.GOOD})
    assert timeline_bounds(chain, states, bounds(len(chain), {2: Verdict.BAD, 1: Verdict.GOOD})).hi == 2
    assert with_mixed_states(states[:3]) == states[:3]  # one repository a step: nothing added


def test_the_blame_step_reuses_a_mixed_state_measured_already():
    from hourly.analysis.bisection import next_blame
    from hourly.model import Blame
    good, bad = Pair("x1", "j1"), Pair("x2", "j2")
    assert next_blame(good, bad, {}) == Pair("x1", "j2")
    assert next_blame(good, bad, {Pair("x1", "j2"): Verdict.BAD}) is Blame.JAX
    assert next_blame(good, bad, {Pair("x1", "j2"): Verdict.GOOD}) == Pair("x2", "j1")
    assert next_blame(good, bad, {Pair("x1", "j2"): Verdict.GOOD, Pair("x2", "j1"): Verdict.BAD}) is Blame.XLA
    assert next_blame(good, bad, {Pair("x1", "j2"): Verdict.GOOD, Pair("x2", "j1"): Verdict.GOOD}) is Blame.BOTH
    assert next_blame(good, bad, {Pair("x1", "j2"): Verdict.SKIP}) is Blame.UNKNOWN


def test_states_sharing_a_commit_with_a_failed_build_are_suspects():
    from hourly.analysis.bisection import near_breaks
    pairs = [Pair("x0", "j0"), Pair("x1", "j0"), Pair("x1", "j1"), Pair("x2", "j1"), Pair("x2", "j2")]
    # (x1, j1) failed; j0 built with x0, so only x1 and j1 are suspects
    assert near_breaks(pairs, [Pair("x1", "j1")], [Pair("x0", "j0")]) == {1, 2, 3}
    assert near_breaks(pairs, [Pair("x1", "j1")], [Pair("x0", "j0"), Pair("x1", "j0")]) == {2, 3}
    assert near_breaks(pairs, [], pairs) == set()


def test_on_the_chain_a_good_mixed_state_settles_the_blame_on_xla():
    """Exit mode: old xla + new jax is a state of the search's chain. Good, the step from it to the
    first bad state moves xla alone, and its commit is named as every step of the chain is (on the
    new jax); bad or untestable, as off the chain. Off the chain nothing changes."""
    from hourly.analysis.bisection import next_blame
    from hourly.model import Blame
    good, bad, mixed = Pair("x1", "j1"), Pair("x2", "j2"), Pair("x1", "j2")
    assert next_blame(good, bad, {}, on_chain=True) == mixed
    assert next_blame(good, bad, {mixed: Verdict.GOOD}, on_chain=True) is Blame.XLA_ON_NEW_JAX
    assert next_blame(good, bad, {mixed: Verdict.BAD}, on_chain=True) is Blame.JAX
    assert next_blame(good, bad, {mixed: Verdict.SKIP}, on_chain=True) is Blame.UNKNOWN
    assert next_blame(good, bad, {mixed: Verdict.GOOD}) == Pair("x2", "j1")  # off the chain: xla alone next
    assert [b.repo for b in Blame] == ["xla", "jax", "xla", None, None]


def test_ties_to_the_later_middle_are_still_a_bisection_with_the_same_probes_in_total():
    """``later_on_ties`` only moves an exact tie to the later of the two middle states: every
    culprit position is still found within ⌈log2 n⌉ probes, and the probes over all positions add
    up to the same number (which positions are found in fewer changes)."""
    for n in range(3, 40):
        totals = []
        for later in (False, True):
            total = 0
            for culprit in range(1, n):
                verdicts: dict[int, Verdict] = {}
                while (i := next_probe(n, verdicts, later_on_ties=later)) is not None:
                    verdicts[i] = Verdict.GOOD if i < culprit else Verdict.BAD
                b = bounds(n, verdicts)
                assert (b.lo, b.hi) == (culprit - 1, culprit)
                assert len(verdicts) <= math.ceil(math.log2(n - 1))
                total += len(verdicts)
            totals.append(total)
        assert totals[0] == totals[1], n
    assert next_probe(4, {}) == 1 and next_probe(4, {}, later_on_ties=True) == 2
    assert next_probe(5, {}) == next_probe(5, {}, later_on_ties=True) == 2  # no tie: the middle


def _exit_search_over_the_chain(commits, culprit, broken=frozenset(), jump=True):
    """The exit search of ``hourly bisect --mode exit`` as the Bisector makes it (the chain of
    mixed states, the cost near a failed build, ties to the later middle, a run of failed builds
    jumped unless not ``jump`` (``--walk-skips``), the blame from the chain): distinct states built
    and the commit named (None: a range or no single commit)."""
    from hourly.analysis.bisection import (
        COST_NEAR_BREAK,
        near_breaks,
        next_blame,
        timeline_bounds,
        with_mixed_states,
    )
    from hourly.model import Blame
    walks = {r: [(f"{r}0", 0)] + [(s, t) for rr, s, t in commits if rr == r] for r in ("xla", "jax")}
    pos = {r: {s: i for i, (s, _) in enumerate(w)} for r, w in walks.items()}
    walks = {r: list(reversed(w)) for r, w in walks.items()}
    repo = culprit[:3]
    built: set[Pair] = set()

    def test(p: Pair) -> Verdict:
        built.add(p)
        if p.xla in broken or p.jax in broken:
            return Verdict.SKIP
        return Verdict.BAD if pos[repo][getattr(p, repo)] >= pos[repo][culprit] else Verdict.GOOD
    states = candidate_states(walks, 0, commits[-1][2])
    chain = with_mixed_states(states)
    pairs = [s.pair for s in chain]
    test(pairs[0]), test(pairs[-1])
    verdicts: dict[int, Verdict] = {}
    while True:
        near = near_breaks(pairs, [pairs[i] for i, v in verdicts.items() if v is Verdict.SKIP],
                           [pairs[i] for i, v in verdicts.items() if v is not Verdict.SKIP] + [pairs[0], pairs[-1]])
        costs = {i: (COST_MEASURED if p in built else COST_BUILD) + (COST_NEAR_BREAK if i in near else 0.0)
                 for i, p in enumerate(pairs) if 0 < i < len(pairs) - 1 and i not in verdicts}
        i = next_probe(len(pairs), verdicts, costs, later_on_ties=True, jump_runs=jump)
        if i is None:
            break
        verdicts[i] = test(pairs[i])
    known = {pairs[i]: v for i, v in verdicts.items()}
    b = timeline_bounds(chain, states, bounds(len(pairs), verdicts))
    good, bad = states[b.lo].pair, states[b.hi].pair
    moved = step_commits(walks, good, bad)
    if not b.adjacent:
        return len(built), None
    repos = [r for r in moved if moved[r]]
    if len(repos) == 2:
        seen: dict[Pair, Verdict] = {}
        while not isinstance(nxt := next_blame(good, bad, seen, Pair(good.xla, bad.jax) in known), Blame):
            seen[nxt] = known[nxt] if nxt in known else test(nxt)
        repos = [nxt.repo] if nxt.repo else []
    return len(built), (moved[repos[0]][0] if len(repos) == 1 and len(moved[repos[0]]) == 1 else None)


def test_every_culprit_of_every_small_history_is_named_exactly_from_the_chain():
    """Every history of up to 5 commits (each xla or jax, at a new instant or at the instant of the
    other repository's commit before it) and every culprit in it: the exit search over the chain,
    its blame taken from the chain's mixed state, names the culprit exactly, builds no state twice
    and at most one state over the information limit ⌈log2 N⌉ + 2 (the blame step's, when the
    culprit's step moves both repositories and the search left the mixed state untested)."""
    import itertools
    checked = 0
    for k in range(2, 6):
        for repos in itertools.product(("xla", "jax"), repeat=k):
            for same in itertools.product((False, True), repeat=k - 1):
                commits, t, count = [], 0, {"xla": 0, "jax": 0}
                for i, (r, s) in enumerate(zip(repos, (False, *same), strict=True)):
                    if s and (commits[-1][0] == r or (i > 1 and commits[-2][2] == t)):
                        break  # one commit per repository and instant
                    t += not s
                    count[r] += 1
                    commits.append((r, f"{r}{count[r]}", t))
                else:
                    for _, culprit, _ in commits:
                        n_built, named = _exit_search_over_the_chain(commits, culprit)
                        assert named == culprit, (commits, culprit)
                        assert n_built <= math.ceil(math.log2(k)) + 3, (commits, culprit, n_built)
                        checked += 1
    assert checked > 800


def test_a_build_break_next_to_the_culprit_is_a_range_never_a_name():
    """The rule above all: where the state before the culprit's or the culprit's own fails to build
    (6+6 alternating commits, a break at each commit but the last two, every culprit), the answer is
    a range; everywhere else the culprit is named exactly."""
    commits = [(r, f"{r}{i}", 2 * i - (r == "xla")) for i in range(1, 7) for r in ("xla", "jax")]
    walks = {r: list(reversed([(f"{r}0", 0)] + [(s, t) for rr, s, t in commits if rr == r])) for r in ("xla", "jax")}
    states = candidate_states(walks, 0, commits[-1][2])
    ranges = 0
    for _, brk, _ in commits[:-2]:
        for _, culprit, _ in commits:
            if culprit == brk:
                continue
            c = next(i for i, st in enumerate(states) if culprit in (st.pair.xla, st.pair.jax))
            hidden = any(brk in (st.pair.xla, st.pair.jax) for st in states[c - 1:c + 1])
            _, named = _exit_search_over_the_chain(commits, culprit, frozenset({brk}))
            assert named == (None if hidden else culprit), (brk, culprit, named)
            ranges += hidden
    assert ranges == 20  # as benchmarks/peer_builds.py counts: 90 of 110 exact, for the peer too


# -- a run of untestable states, jumped (issue 35 item 5) -------------------------------------------

def _exit_search(n: int, skips: set[int], first_bad: int, jump: bool) -> tuple[object, int, dict[int, Verdict]]:
    """Exit mode's search over states 0..n-1 (skips untestable): its bounds, probes and verdicts."""
    verdicts: dict[int, Verdict] = {}
    while (i := next_probe(n, verdicts, later_on_ties=True, jump_runs=jump)) is not None:
        assert i not in verdicts
        verdicts[i] = Verdict.SKIP if i in skips else Verdict.BAD if i >= first_bad else Verdict.GOOD
    return bounds(n, verdicts), len(verdicts), verdicts


# quick: the [3-12] case covers the same comparison on every span of 3 to 12 states; the spans of 13
# to 16 are slow (before, the slow case ran the spans up to 12 again: CI now runs each span once)
@pytest.mark.parametrize(("smallest", "largest", "cases"), [pytest.param(3, 12, 9000, id="3-12"),
                                                            pytest.param(13, 16, 50000, id="13-16",
                                                                         marks=pytest.mark.slow)])
def test_a_run_of_untestable_states_is_jumped_with_the_answers_of_walking_it(smallest, largest, cases):
    """Every span of 3 to 16 states (the two cases together), every first bad state, and no
    untestable state, every run of them, or every pair of runs with a state between: jumping the
    runs gives the bounds that walking every state gives (the same culprit, or the same range), and
    over the single runs it probes fewer states in all."""
    import itertools
    probes = {False: 0, True: 0}
    checked = 0
    for n in range(smallest, largest + 1):
        runs = [set(range(a, z + 1)) for a in range(1, n - 1) for z in range(a, n - 1)]
        for first_bad in range(1, n):
            for run in [set()] + runs:
                (b0, k0, _), (b1, k1, _) = _exit_search(n, run, first_bad, False), _exit_search(n, run, first_bad, True)
                assert b1 == b0, (n, sorted(run), first_bad)
                probes[False] += k0
                probes[True] += k1
                checked += 1
            for r1, r2 in itertools.combinations(runs, 2):
                if max(r1) + 1 < min(r2):
                    skips = r1 | r2
                    assert _exit_search(n, skips, first_bad, True)[0] == _exit_search(n, skips, first_bad, False)[0], \
                        (n, sorted(r1), sorted(r2), first_bad)
                    checked += 1
    assert checked > cases and probes[True] < probes[False]


def test_a_window_that_never_builds_costs_two_logarithmic_searches():
    """Every state inside untestable (the peer's test with every commit but the ends broken): the
    answer is the whole window, as walking finds it, for about two logarithmic searches of the
    run's edges instead of every state (a run short enough to walk for no more than the search has
    spent is walked); the states it did not probe are said."""
    from hourly.analysis.bisection import RUN_LOOKS, not_probed
    for n in range(4, 260):
        b, k, verdicts = _exit_search(n, set(range(1, n - 1)), n // 3 or 1, True)
        assert (b.lo, b.hi) == (0, n - 1)
        assert k <= 2 * (math.ceil(math.log2(n)) + RUN_LOOKS), (n, k)  # a short run is walked: as cheap
        assert n < 32 or k <= math.ceil(math.log2(n)) + RUN_LOOKS + 5, (n, k)
        assert len(not_probed(n, verdicts)) == n - 2 - k
    # a run beside the culprit: its edges, then the culprit's own step
    b, k, _ = _exit_search(100, set(range(10, 60)), 70, True)
    assert (b.lo, b.hi) == (69, 70) and k <= 14


def test_one_untestable_probe_is_walked_around_as_before():
    """Only two untestable probes in a row start the jump: after one, the search probes as it did
    (the state beside it included), and the k-ary rounds (``plan_probes``) never jump."""
    for n in range(3, 60):
        for s in range(1, n - 1):
            assert next_probe(n, {s: Verdict.SKIP}, later_on_ties=True, jump_runs=True) == \
                next_probe(n, {s: Verdict.SKIP}, later_on_ties=True)
    assert next_probe(20, {10: Verdict.SKIP, 11: Verdict.SKIP}, later_on_ties=True) == 9  # walked
    assert next_probe(20, {10: Verdict.SKIP, 11: Verdict.SKIP}, later_on_ties=True, jump_runs=True) in (5, 15)
    # two untestable probes, but a good one after them: the run is no longer the latest news
    assert next_probe(20, {10: Verdict.SKIP, 11: Verdict.SKIP, 3: Verdict.GOOD}, later_on_ties=True, jump_runs=True) \
        == next_probe(20, {10: Verdict.SKIP, 11: Verdict.SKIP, 3: Verdict.GOOD}, later_on_ties=True)


def test_on_the_chain_a_history_that_never_builds_is_jumped_and_answered_as_walked():
    """Two repositories, 12 + 12 alternating commits, every one but the last of each breaking the
    build of the states that hold it (the peer's random test with build pass probability 0): the
    answer is the range walking gives, for far fewer builds; with one break (the 6+6 family of
    benchmarks/peer_builds.py) the answer and the builds are walking's."""
    commits = [(r, f"{r}{i}", 2 * i - (r == "xla")) for i in range(1, 13) for r in ("xla", "jax")]
    broken = frozenset(s for _, s, _ in commits[:-2])
    for _, culprit, _ in commits:
        jumped, walked = (_exit_search_over_the_chain(commits, culprit, broken, jump) for jump in (True, False))
        assert jumped[1] == walked[1]
        assert walked[0] == 25 and jumped[0] <= 12, (culprit, jumped, walked)  # 22 inside, the ends, the mixed
    six = commits[:12]
    six = [(r, s, t) for r, s, t in six]
    for _, brk, _ in six[:-2]:
        for _, culprit, _ in six:
            if culprit != brk:
                assert _exit_search_over_the_chain(six, culprit, frozenset({brk})) == \
                    _exit_search_over_the_chain(six, culprit, frozenset({brk}), jump=False)


def test_unpaired_ends_not_apart_at_the_last_look_are_alike_only_where_walds_test_shows_it(rng):
    """Ends a real −7 % apart in 8 % noise, 5 samples each, stay under the unpaired check's 3
    standard errors: "do not differ" would send a user elsewhere. Alike ends say so only where
    Wald's test at its own bound shows it, and say the size ruled out."""
    judge = MetricJudge()
    good, bad = list(rng.normal(100, 8, 5)), list(rng.normal(93, 8, 5))
    apart, sep = judge.apart(good, bad)
    assert not apart
    with pytest.raises(UserError, match=r"were not shown to differ, nor to be alike \(.* standard errors, 3 needed\): a change "
                                        r"within the samples' spread may lie between them — pass a larger "
                                        r"--max-repeats") as e:
        judge.check_ends(good, bad, sep, True, False, "the window")
    assert "do not differ" not in str(e.value)
    # nor through ends(): at the last look, Wald's test does not show them alike either
    with pytest.raises(UserError, match="were not shown to differ, nor to be alike"):
        judge.ends(good, bad, True, True, False, "the window", min_change=0.02)
    # ends alike in 0.1 % noise are shown so, with the size ruled out
    same_a, same_b = list(rng.normal(100, 0.1, 8)), list(rng.normal(100, 0.1, 8))
    assert not judge.ends(same_a, same_b, False, True, False, "the window", min_change=0.02)  # not yet final
    with pytest.raises(UserError, match=r"the ends of the window do not differ \(.* standard errors; by Wald's test "
                                        r"no difference of 1\.5 % or more\)"):
        judge.ends(same_a, same_b, True, True, False, "the window", min_change=0.02)
