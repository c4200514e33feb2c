"""Pure tests of the step detector on synthetic series (seeded)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hourly.detect import (Change, ChangeKind, detect, detect_changes, estimate_noise, point_value,
                           segment, z_threshold)


def noisy(levels: list[tuple[int, float]], noise: float, seed: int) -> list[float]:
    """Concatenate (length, level) segments with relative Gaussian noise."""
    rng = np.random.default_rng(seed)
    out: list[float] = []
    for n, level in levels:
        out += list(level * (1 + noise * rng.standard_normal(n)))
    return out


def spans(changes: list[Change]) -> list[tuple[int, int]]:
    return [(c.before_index, c.after_index) for c in changes]


def test_issue_example_one_regression_across_the_failed_point():
    found = detect([100, 100.1, 99.9, None, 90, 90.2])
    assert found.failed == [3]
    assert len(found.changes) == 1
    c = found.changes[0]
    assert (c.before_index, c.after_index) == (2, 4)
    assert c.kind is ChangeKind.REGRESSION
    assert c.relative_change == pytest.approx(-0.1, abs=0.005)
    assert c.level_before == pytest.approx(100.0, abs=0.15)
    assert c.level_after == pytest.approx(90.1, abs=0.15)
    assert c.strength > 10


@pytest.mark.parametrize("noise", [0.0005, 0.002, 0.005, 0.01])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_several_steps_up_and_down_are_all_found(noise, seed):
    # 75 hourly points with steps of -5 %, +3 %, -4 % at 20, 40, 60
    series = noisy([(20, 100.0), (20, 95.0), (20, 97.85), (15, 93.9)], noise, seed)
    changes = detect_changes(series)
    assert len(changes) == 3, spans(changes)
    for c, at, kind in zip(changes, [20, 40, 60],
                           [ChangeKind.REGRESSION, ChangeKind.IMPROVEMENT, ChangeKind.REGRESSION]):
        assert c.before_index < at <= c.after_index or abs(c.after_index - at) <= 1
        assert c.kind is kind
    assert changes[0].relative_change == pytest.approx(-0.05, abs=0.01)
    assert changes[1].relative_change == pytest.approx(0.03, abs=0.01)


@pytest.mark.parametrize("noise", [0.0005, 0.002, 0.005])
def test_one_percent_step_is_found_in_quiet_noise(noise):
    series = noisy([(30, 200.0), (30, 198.0)], noise, seed=7)
    changes = detect_changes(series)
    assert spans(changes) == [(29, 30)]
    assert changes[0].kind is ChangeKind.REGRESSION


@pytest.mark.parametrize("noise", [0.0005, 0.002, 0.005, 0.01])
@pytest.mark.parametrize("seed", range(5))
def test_pure_noise_has_no_step(noise, seed):
    assert detect_changes(noisy([(75, 577.0)], noise, seed)) == []


@pytest.mark.parametrize("where", [0, 10, 37, 74])
@pytest.mark.parametrize("size", [0.03, -0.08, 0.5])
def test_one_outlier_is_not_a_step(where, size):
    series = noisy([(75, 100.0)], 0.003, seed=where)
    series[where] *= 1 + size
    found = detect(series)
    assert found.changes == []
    assert found.outliers == [where]


def test_outlier_next_to_a_step_neither_hides_nor_adds_one():
    series = noisy([(30, 100.0), (30, 94.0)], 0.003, seed=11)
    series[29] *= 1.08  # last point before the step jumps up
    changes = detect_changes(series)
    assert len(changes) == 1
    assert changes[0].before_index < 30 <= changes[0].after_index
    assert changes[0].relative_change == pytest.approx(-0.06, abs=0.01)


def test_two_point_dip_is_two_steps():
    series = noisy([(20, 100.0), (3, 90.0), (20, 100.0)], 0.002, seed=4)
    changes = detect_changes(series)
    assert [c.kind for c in changes] == [ChangeKind.REGRESSION, ChangeKind.IMPROVEMENT]
    assert spans(changes) == [(19, 20), (22, 23)]


def test_failed_points_neither_create_nor_hide_a_step():
    series: list = noisy([(40, 100.0)], 0.003, seed=5)
    for i in (3, 15, 16, 30):
        series[i] = None
    assert detect_changes(series) == []
    stepped: list = noisy([(20, 100.0), (20, 104.0)], 0.003, seed=6)
    stepped[19] = stepped[20] = stepped[21] = None  # the step hides behind three failures
    found = detect(stepped)
    assert spans(found.changes) == [(18, 22)]
    assert found.changes[0].kind is ChangeKind.IMPROVEMENT
    assert found.failed == [19, 20, 21]


def test_lower_is_better_flips_the_kind():
    series = [10.0, 10.01, 9.99, 10.0, 11.0, 11.02, 10.99, 11.0]
    up = detect_changes(series)
    down = detect_changes(series, higher_is_better=False)
    assert spans(up) == spans(down) == [(3, 4)]
    assert up[0].kind is ChangeKind.IMPROVEMENT
    assert down[0].kind is ChangeKind.REGRESSION
    assert down[0].relative_change == pytest.approx(0.1, abs=0.005)


def test_min_change_drops_small_but_significant_steps():
    series = noisy([(30, 100.0), (30, 98.5), (30, 90.0)], 0.001, seed=9)
    assert len(detect_changes(series)) == 2
    big = detect_changes(series, min_change=0.05)
    assert len(big) == 1
    assert big[0].before_index < 60 <= big[0].after_index
    # the level before the big step is now the merged segment of 100 and 98.5
    assert 98.0 < big[0].level_before < 100.5


def test_repeated_samples_set_the_noise():
    rng = np.random.default_rng(3)
    pts = [list(100 * (1 + 0.002 * rng.standard_normal(5))) for _ in range(6)]
    pts += [list(97 * (1 + 0.002 * rng.standard_normal(5))) for _ in range(6)]
    found = detect(pts)
    assert found.noise_source == "both"
    assert spans(found.changes) == [(5, 6)]
    # only repeats: two points, each with 5 samples, 3 % apart, is a step
    two = detect([pts[0], pts[-1]])
    assert two.noise_source == "repeats"
    assert len(two.changes) == 1
    # ... and two points 0.1 % apart with 1 % spread is not
    wide = [list(100 * (1 + 0.01 * rng.standard_normal(5))), list(100.1 * (1 + 0.01 * rng.standard_normal(5)))]
    assert detect_changes(wide) == []


@pytest.mark.parametrize("series, expected", [
    ([], []),
    ([None, None], []),
    ([577.0], []),
    ([100.0, 100.0], []),
    ([100.0, 90.0], [(0, 1)]),
    ([100.0, 100.05], []),
    ([100.0, 100.0, 90.0], [(1, 2)]),
    ([100.0, 90.0, 90.0], [(0, 1)]),
    ([100.0, 90.0, 100.0], []),        # a lone point between two that agree: outlier
    ([100.0, None, 90.0], [(0, 2)]),
])
def test_short_series(series, expected):
    assert spans(detect_changes(series)) == expected


@pytest.mark.parametrize("value", [0.0, 5.0, 577.1, -3.0])
def test_constant_series_has_no_step(value):
    found = detect([value] * 30)
    assert found.changes == []
    assert found.outliers == []


def test_constant_series_with_a_real_step():
    found = detect([5.0] * 10 + [6.0] * 10)
    assert spans(found.changes) == [(9, 10)]
    assert found.changes[0].relative_change == pytest.approx(0.2)


def test_zero_level_before_gives_infinite_relative_change():
    c = detect_changes([0.0] * 6 + [1.0] * 6)[0]
    assert math.isinf(c.relative_change) and c.relative_change > 0


def test_point_value_is_the_median_of_finite_samples():
    assert point_value(None) is None
    assert point_value([]) is None
    assert point_value([float("nan")]) is None
    assert point_value(3) == 3.0
    assert point_value([1.0, 2.0, 10.0]) == 2.0
    assert point_value([1.0, None, 3.0]) == 2.0  # type: ignore[list-item]


def test_noise_estimate_ignores_a_step():
    values = np.array(noisy([(40, 100.0), (40, 80.0)], 0.005, seed=2))
    sigma, source = estimate_noise(values, [[v] for v in values])
    assert source == "successive differences"
    assert 0.3 < sigma < 0.8  # true: 0.5 before, 0.4 after


def test_segment_is_exact_on_clean_steps():
    v = np.array([1.0] * 5 + [3.0] * 4 + [2.0] * 6)
    assert segment(v, penalty=0.1) == [0, 5, 9]
    assert segment(v, penalty=1e6) == [0]


def test_threshold_grows_slowly_with_length():
    assert z_threshold(2) >= 3.5
    assert z_threshold(75) < z_threshold(1000) < 5


def test_large_levels_with_tiny_noise_keep_their_precision():
    # nanosecond timings around 1e12 with 0.05 % noise and a 1 % step
    series = [v * 1e10 for v in noisy([(30, 100.0), (30, 101.0)], 0.0005, seed=8)]
    assert spans(detect_changes(series, higher_is_better=False)) == [(29, 30)]
