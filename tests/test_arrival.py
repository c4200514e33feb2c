"""Pure tests of the on-arrival decisions of a watch (hourly/analysis/arrival.py), plain lists."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wilcoxon

from hourly.analysis.arrival import (
    MAX_PAIRS,
    MIN_PAIRS,
    NEWEST,
    NOISY_NOISE,
    ArrivalStatus,
    Confirmed,
    Verdict,
    arrival,
    confirm,
    group,
    plan_pairs,
    recovery,
)
from hourly.analysis.detect import ChangeKind


def nightly(levels: list[tuple[int, float]], noise: float, seed: int, runs: int = 1) -> list:
    """(nights, level) stretches with relative Gaussian noise; ``runs`` samples a night."""
    rng = np.random.default_rng(seed)
    out: list = []
    for n, level in levels:
        for _ in range(n):
            x = level * (1 + noise * rng.standard_normal(runs))
            out.append(float(x[0]) if runs == 1 else [float(v) for v in x])
    return out


def measured_again(old_level: float, new_level: float, noise: float, pairs: int, seed: int) -> tuple[list, list]:
    """Interleaved runs of the two builds: each pair shares the machine's factor of the moment."""
    rng = np.random.default_rng(seed)
    machine = 1 + 0.5 * noise * rng.standard_normal(pairs)
    old = old_level * machine * (1 + noise * rng.standard_normal(pairs))
    new = new_level * machine * (1 + noise * rng.standard_normal(pairs))
    return list(old), list(new)


def settle(old_level: float, new_level: float, noise: float, first: int, seed: int):
    """Confirm as a watch does: measure the planned pairs, and more while the verdict is MORE."""
    want = first
    old: list = []
    new: list = []
    k = 0
    while True:
        o, n = measured_again(old_level, new_level, noise, want - len(old), seed + k)
        old, new, k = old + o, new + n, k + 1
        c = confirm(old, new, min_change=0.02)
        if c.verdict is not Verdict.MORE:
            return c
        want = c.next_pairs


def test_a_step_at_the_newest_build_is_suspected_on_its_arrival_and_confirmed():
    series = nightly([(20, 100.0), (1, 90.0)], 0.003, seed=1)
    a = arrival(series, min_change=0.02)
    assert a.status is ArrivalStatus.SUSPECT
    (s,) = a.suspects
    assert (s.before_index, s.after_index) == (19, 20)
    assert s.kind is ChangeKind.REGRESSION and s.relative_change == pytest.approx(-0.10, abs=0.01)
    c = settle(100.0, 90.0, 0.003, plan_pairs(s.relative_change, s.noise), seed=2)
    assert c.verdict is Verdict.CONFIRMED
    assert c.pairs == MIN_PAIRS                      # a 30-sigma step needs no more than the minimum
    assert c.change == pytest.approx(-0.10, abs=0.005) and c.low < -0.10 < c.high < -0.05
    assert c.higher == 0                             # every new run below its old neighbour


def test_a_quiet_night_is_quiet_and_a_time_that_grows_is_a_regression():
    assert arrival(nightly([(21, 100.0)], 0.003, seed=3)).status is ArrivalStatus.QUIET
    times = nightly([(20, 10.0), (1, 11.0)], 0.003, seed=4)
    (s,) = arrival(times, higher_is_better=False).suspects
    assert s.kind is ChangeKind.REGRESSION and s.relative_change > 0.09


def test_a_slow_night_is_suspected_but_measuring_again_rejects_it():
    series = nightly([(20, 100.0)], 0.003, seed=5) + [91.0]     # the machine was slow that night
    (s,) = arrival(series).suspects
    c = settle(100.0, 100.0, 0.003, plan_pairs(s.relative_change, s.noise), seed=6)
    assert c.verdict is Verdict.REJECTED
    assert abs(c.change) < 0.005 and -0.02 < c.low < c.high < 0.02


def test_a_rejected_pair_is_not_suspected_again_and_the_next_night_is_judged_on_its_own():
    series = nightly([(20, 100.0)], 0.003, seed=5) + [91.0]
    assert arrival(series, judged={(19, 20)}).status is not ArrivalStatus.SUSPECT
    assert arrival(series + [100.1], judged={(19, 20)}).status is ArrivalStatus.QUIET
    # the night after the slow one is a real step: judged against the level, the slow night left out
    (s,) = arrival(series + [90.0], judged={(19, 20)}).suspects
    assert s.after_index == 21 and s.before_index <= 19 and s.relative_change < -0.08


def test_a_rejected_slow_night_in_a_short_history_hides_no_later_step():
    # five builds, a slow night that measuring again rejected, a quiet night, then a 20 % step: the
    # slow night is no evidence of the series' noise either (it read as 9 % noise, and the step hid in it)
    series = nightly([(4, 100.0)], 0.002, seed=11) + [85.0, 100.1, 80.0]
    (s,) = arrival(series, judged={(3, 4)}, rejected={(3, 4)}).suspects
    assert s.before_index <= 5 and s.after_index == 6 and s.relative_change == pytest.approx(-0.2, abs=0.01)
    assert arrival(series[:-1], judged={(3, 4)}, rejected={(3, 4)}).status is ArrivalStatus.QUIET
    # left undecided (not ruled out), the night stays in the detector's series: unseen there
    assert arrival(series, judged={(3, 4)}).status is ArrivalStatus.QUIET


def test_a_step_confirmed_measured_the_other_way_round_is_confirmed_in_its_own_direction():
    # its first night was read 10 % low on a slow machine, but the build is 5 % faster
    c = settle(100.0, 105.0, 0.003, MIN_PAIRS, seed=7)
    assert c.verdict is Verdict.CONFIRMED and c.change == pytest.approx(0.05, abs=0.005)


def test_a_missing_night_is_skipped_and_the_window_spans_it():
    series = nightly([(20, 100.0)], 0.003, seed=8) + [None, 90.0]
    (s,) = arrival(series).suspects
    assert (s.before_index, s.after_index) == (19, 21)
    # a night without a build decides nothing new
    assert arrival(series + [None], since=22).status is ArrivalStatus.UNMEASURED
    assert arrival(series[:-1], since=20).status is ArrivalStatus.UNMEASURED
    assert "no build" in arrival(series[:-1], since=20).why


def test_too_little_history_says_so_instead_of_quiet():
    a = arrival([100.0, 100.2, 100.1])
    assert a.status is ArrivalStatus.SHORT and "3 are needed" in a.why
    # a step the detector sees in them is still suspected: measuring again is what decides
    assert arrival([100.0, 100.2, 90.0]).status is ArrivalStatus.SUSPECT


def test_a_small_step_is_confirmed_once_its_later_nights_make_it_plain():
    # 2.5 % in 1 % noise, one run a night: too small for its first night alone; the watch judges
    # each night, measures every suspect again (true levels: 100 before build 25, 102.5 after)
    # and confirms the step within five nights, with a window that holds it
    series = nightly([(25, 100.0), (8, 102.5)], 0.01, seed=9)
    assert arrival(series[:26], since=25).status is ArrivalStatus.QUIET
    judged: set[tuple[int, int]] = set()
    confirmed = None
    for night in range(26, 34):
        for s in arrival(series[:night], since=20, judged=judged).suspects:
            c = settle(100.0 if s.before_index < 25 else 102.5, 100.0 if s.after_index < 25 else 102.5,
                       0.01, plan_pairs(s.relative_change, s.noise), seed=night)
            if c.verdict is Verdict.CONFIRMED:
                confirmed = confirmed or (night - 1, s)
            else:
                judged.add((s.before_index, s.after_index))
        if confirmed:
            break
    assert confirmed is not None
    last, s = confirmed
    assert s.before_index < 25 <= s.after_index and last - 25 <= 5


def test_a_bimodal_benchmark_raises_suspicions_but_never_an_alert():
    """One run a night from two modes 10 % apart: the detector takes runs of the slow mode for
    steps, and the newest build alone in the slow mode lies beyond most of its level; measuring
    the two builds again shows the same two modes in both, so nothing is confirmed."""
    rng = np.random.default_rng(10)

    def runs(k: int) -> list[float]:
        return [100.0 * (1.1 if rng.random() < 0.3 else 1.0) * (1 + 0.003 * rng.standard_normal()) for _ in range(k)]

    series = runs(40)
    judged: set[tuple[int, int]] = set()
    verdicts = []
    for night in range(10, 41):
        for s in arrival(series[:night], judged=judged).suspects:
            c = confirm(runs(MAX_PAIRS), runs(MAX_PAIRS))
            verdicts.append(c.verdict)
            judged.add((s.before_index, s.after_index))
    assert verdicts and Verdict.CONFIRMED not in verdicts


def test_the_newest_build_in_a_mode_its_level_already_visits_is_not_a_new_level():
    levels = [100.0 + 0.3 * math.sin(i) for i in range(30)]
    for i, v in zip((6, 13, 21, 27), (110.5, 110.1, 110.4, 110.3), strict=True):   # the other mode
        levels[i] = v
    levels.append(110.2)
    # the test of the newest builds: its level holds three nights at least as far (110.3-110.5),
    # more than BEYOND (1); allowed four, it is a step
    from hourly.analysis.arrival import _newest_step
    logs = [math.log(v) for v in levels]
    points = list(range(31))
    assert _newest_step(points, logs, 30, 0.003, True, 0.02, True, 3.0, 1, 0.003) is None
    assert _newest_step(points, logs, 30, 0.003, True, 0.02, True, 3.0, 4, 0.003) is not None


def test_a_step_under_one_nights_noise_is_seen_over_the_newest_builds_of_a_noisy_series():
    # 7 % in 4 % noise, one run a night: six builds after it never hold it beyond its level (the
    # suspects those nights raise are elsewhere); twelve do, from the step's eleventh night on
    series = nightly([(24, 100.0), (14, 107.0)], 0.04, seed=8)

    def holding(night: int, **kw) -> bool:
        return any(s.before_index < 24 <= s.after_index
                   for s in arrival(series[:night], min_change=0.02, since=20, **kw).suspects)

    assert arrival(series, min_change=0.02).noise >= NOISY_NOISE
    assert not any(holding(night, noisy_newest=NEWEST) for night in range(25, 39))
    assert [night for night in range(25, 39) if holding(night)] == [34, 35, 36]


def test_a_change_measured_again_too_slow_for_its_window_is_a_drift_not_a_step():
    # +3 % between two builds, plain in 80 pairs: a step between neighbours, but over a window of
    # eight builds it is under MIN_RATE (0.3) minimum changes a build: a drift, said so
    old, new = measured_again(100.0, 103.0, 0.005, MAX_PAIRS, seed=21)
    assert confirm(old, new).verdict is Verdict.CONFIRMED
    assert confirm(old, new, window=4).verdict is Verdict.CONFIRMED      # 3 % >= 0.3 x 2 % x 4
    slow = confirm(old, new, window=8)
    assert slow.verdict is Verdict.UNDECIDED and slow.low > 0.02 and "drift" in slow.note
    assert confirm(old, new, window=8, min_rate=0.0).verdict is Verdict.CONFIRMED


def test_several_runs_a_night():
    series = nightly([(15, 100.0), (1, 95.0)], 0.005, seed=11, runs=3)
    (s,) = arrival(series).suspects
    assert s.after_index == 15 and s.relative_change == pytest.approx(-0.05, abs=0.01)


def test_more_pairs_are_asked_for_until_the_cap_then_it_says_it_is_unsure():
    old, new = measured_again(100.0, 101.5, 0.05, MIN_PAIRS, seed=12)
    c = confirm(old, new)
    assert c.verdict is Verdict.MORE and c.next_pairs == 2 * MIN_PAIRS
    old, new = measured_again(100.0, 101.5, 0.05, MAX_PAIRS, seed=13)
    assert confirm(old, new).verdict is Verdict.UNDECIDED
    assert confirm(old[:3], new[:3]).verdict is Verdict.MORE
    assert confirm(old[:3], new[:3]).next_pairs == MIN_PAIRS


def test_a_pair_with_a_failed_run_is_left_out():
    old, new = measured_again(100.0, 90.0, 0.003, MIN_PAIRS + 2, seed=14)
    new[0] = None
    old[1] = math.nan
    c = confirm(old, new)
    assert c.pairs == MIN_PAIRS and c.verdict is Verdict.CONFIRMED


def test_the_p_value_is_the_exact_signed_rank_one():
    rng = np.random.default_rng(15)
    old = list(100 * (1 + 0.01 * rng.standard_normal(12)))
    new = list(101 * (1 + 0.01 * rng.standard_normal(12)))
    d = np.log(new) - np.log(old)
    assert confirm(old, new).p_value == pytest.approx(wilcoxon(d, method="exact").pvalue, rel=1e-9)


def test_the_plan_grows_as_the_step_shrinks_in_noise_units():
    big = plan_pairs(0.20, 0.01)
    mid = plan_pairs(0.03, 0.02)
    small = plan_pairs(0.02, 0.05)
    assert big == MIN_PAIRS and small == MAX_PAIRS and big < mid < small


def _step(metric: str, before: int, after: int, lb: float = 100.0, la: float = 90.0) -> Confirmed:
    kind = ChangeKind.REGRESSION if la < lb else ChangeKind.IMPROVEMENT
    return Confirmed(metric, before, after, lb, la, la / lb - 1, kind)


def test_steps_one_change_can_explain_are_one_alert():
    steps = [_step("compile", 19, 20), _step("run", 18, 20), _step("memory", 25, 26, 10.0, 12.0)]
    alerts = group(steps)
    assert [(a.before_index, a.after_index) for a in alerts] == [(19, 20), (25, 26)]
    assert [s.metric for s in alerts[0].steps] == ["run", "compile"]
    assert alerts[0].regression and not alerts[1].regression
    # windows that only touch (the culprit would be 20 for one and 21 for the other) are two alerts
    assert len(group([_step("a", 19, 20), _step("b", 20, 21)])) == 2
    assert group([]) == []


def test_a_later_step_back_to_the_old_level_is_a_recovery():
    regression = _step("run", 19, 20, 100.0, 90.0)
    fixed = _step("run", 24, 25, 90.0, 100.5)
    partly = _step("run", 22, 23, 90.0, 95.0)
    worse = _step("run", 22, 23, 90.0, 80.0)
    r = recovery(regression, [partly, worse, fixed])
    assert r is not None and r.after_index == 25 and r.relative_to_before == pytest.approx(0.005)
    assert recovery(regression, [partly, worse]) is None
    assert recovery(regression, [_step("run", 10, 11, 90.0, 100.0)]) is None   # before it: not a recovery


def test_the_build_measured_again_as_the_new_level_reads_at_the_new_level():
    # four builds, a slow night that measuring again rejected, a build at the old level, then a 20 %
    # step: the tail of the last two builds (median halfway) can be the strongest split, but its
    # first build reads at the old level — measured again against the level it could only reject
    # the step at the newest build (it did, once in about 17 watches of the docker test)
    for seed in range(120):
        rng = np.random.default_rng(seed)
        series = [[float(v * (1 + (rng.random() - 0.5) * 0.006)) for _ in range(3)]
                  for v in (100.0, 100.0, 100.0, 100.0, 85.0, 100.0, 80.0)]
        a = arrival(series, judged={(3, 4)}, rejected={(3, 4)}, since=5)
        (s,) = a.suspects
        assert s.after_index == 6 and s.before_index in (3, 5), (seed, s)
        assert s.relative_change == pytest.approx(-0.2, abs=0.01)
