"""The pure parts of bisection: states, probe choice, verdicts."""

import math

import numpy as np
import pytest

from hourly.bisect_math import (COST_BUILD, COST_CACHED, COST_MEASURED, Verdict, bounds, candidate_states,
                                classify, exit_transitions, exit_verdict, next_probe, plain_bisection_probes,
                                separation, step_commits, worse)
from hourly.resolve import Pair

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
    for a, b in zip(states, states[1:]):
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
    assert exit_verdict([0, 0]) is Verdict.GOOD
    assert exit_verdict([0, 1]) is Verdict.BAD
    assert exit_verdict([125]) is Verdict.SKIP
    assert exit_verdict([None]) is Verdict.BAD  # timed out
    assert exit_verdict([]) is Verdict.SKIP
    g, b, s = Verdict.GOOD, Verdict.BAD, Verdict.SKIP
    assert exit_transitions([g, g, s, b, b, g, None, b]) == [(1, 3), (5, 7)]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_classify_clear_cases(rng):
    good = list(rng.normal(100, 1, 5))
    bad = list(rng.normal(90, 1, 5))
    assert classify(list(rng.normal(100, 1, 3)), good, bad).verdict is Verdict.GOOD
    assert classify(list(rng.normal(90, 1, 3)), good, bad).verdict is Verdict.BAD
    assert separation(good, bad) > 10
    assert worse(good, bad, higher_is_better=True) and not worse(good, bad, higher_is_better=False)


def test_classify_noisy_probe_is_unsure_until_enough_samples(rng):
    good = list(rng.normal(100, 3, 3))
    bad = list(rng.normal(94, 3, 3))
    one = classify([(np.mean(good) + np.mean(bad)) / 2], good, bad)
    assert one.verdict is Verdict.UNSURE
    many = classify(list(rng.normal(94, 3, 12)), good, bad)
    assert many.verdict is Verdict.BAD


def test_classify_between_the_ends_means_a_second_step(rng):
    good = list(rng.normal(100, 0.2, 3))
    bad = list(rng.normal(85, 0.2, 3))
    c = classify(list(rng.normal(93, 0.2, 3)), good, bad)
    assert c.verdict is Verdict.BAD and c.between
    beyond = classify(list(rng.normal(80, 0.2, 3)), good, bad)
    assert beyond.verdict is Verdict.BAD and not beyond.between
    better = classify(list(rng.normal(104, 0.2, 3)), good, bad)
    assert better.verdict is Verdict.GOOD


def test_classifier_error_rate_on_many_draws(rng):
    """Sequential sampling as the bisector does it: start at 1 sample, double while unsure (the
    ends as often as the probe), cap 16."""
    wrong = unsure = 0
    trials = 400
    for k in range(trials):
        good = list(rng.normal(100, 2, 3))
        bad = list(rng.normal(96, 2, 3))
        truth = Verdict.GOOD if k % 2 else Verdict.BAD
        mean = 100 if truth is Verdict.GOOD else 96
        samples = list(rng.normal(mean, 2, 1))
        while True:
            c = classify(samples, good, bad)
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
    assert unsure / trials < 0.25
