"""Paired evidence and crash windows, as numbers: what a round's centring cancels and keeps, the
judge's three outcomes on it, and the searches that find a crash window's edges (pure logic:
plain lists; tests/test_drive.py runs them inside whole bisections)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from hourly.analysis.crash_window import CrashWindow, first_crash, jump, last_crash
from hourly.analysis.judges.metric import Level
from hourly.analysis.judges.paired import PairedMetricJudge, ends_delta
from hourly.analysis.paired import Paired, drift, log_scale, round_order
from hourly.errors import UserError


def rounds(levels: dict[int, float], speeds: list[float], noise: float = 0.0, seed: int = 0) -> list[dict[int, float]]:
    """Rounds of the states of ``levels`` on a machine running at ``speeds[r]`` in round ``r``."""
    rng = np.random.default_rng(seed)
    return [{s: v * m * (1 + noise * rng.standard_normal()) for s, v in levels.items()} for m in speeds]


def test_a_common_drift_cancels_exactly_and_the_difference_stays():
    """Every state of a round runs 0-30 % slower alike: the paired difference of two states is their
    own ratio whatever the machine did, and no noise is left."""
    blocks = rounds({0: 100.0, 1: 110.0}, [1.0, 0.9, 0.8, 1.3, 0.7])
    p = Paired.of(blocks, [0, 1])
    assert p.log and p.rounds == 5
    assert math.isclose(p.difference(0, 1), 0.10, rel_tol=1e-9)
    groups, dof = p.noise_groups()
    assert dof == 4 and max(abs(x - groups[0][0]) for x in groups[0]) < 1e-12
    # unpaired, the same values look like noise of ±25 %
    assert np.std([b[0] for b in blocks]) / 100 > 0.2


def test_the_noise_of_one_process_is_estimated_from_the_centred_rounds():
    """Gaussian noise of 1 % per process under a wandering machine: the scaled centred values give
    back about 1 % (the machine's 20 % swings left out), for two states and for three."""
    speeds = list(1 + 0.2 * np.sin(np.arange(200) / 7))
    for k in (2, 3):
        p = Paired.of(rounds({s: 100.0 + 5 * s for s in range(k)}, speeds, noise=0.01, seed=k), list(range(k)))
        groups, dof = p.noise_groups()
        sigma, _ = PairedMetricJudge.noise([(groups, dof)], p.log, 100.0)
        assert dof == (k - 1) * 199 and 0.008 < sigma < 0.012, (k, sigma)


def test_negative_values_are_compared_as_differences():
    blocks = [{0: -5.0, 1: -3.0}, {0: -4.0, 1: -2.0}]
    assert not log_scale(v for b in blocks for v in b.values())
    p = Paired.of(blocks, [0, 1])
    assert not p.log and math.isclose(p.difference(0, 1), 2.0)


def test_a_round_that_lost_a_state_is_left_out():
    p = Paired.of([{0: 1.0, 1: 2.0}, {0: 1.0, 1: None}, {0: 1.1, 1: 2.2}], [0, 1])
    assert p.rounds == 2 and p.raw(1) == [2.0, 2.2]


def test_rounds_alternate_their_order():
    assert [round_order("abc", r) for r in range(3)] == [list("abc"), list("cba"), list("abc")]


def test_drift_is_a_change_of_a_state_beyond_its_noise():
    change, z = drift([100.0, 101.0, 99.0], [90.0, 91.0, 89.0], 0.01, True)
    assert math.isclose(change, -0.1, rel_tol=0.02) and z > 4
    change, z = drift([100.0, 101.0], [100.5, 99.5], 0.01, True)
    assert abs(change) < 0.01 and z < 1


def test_the_paired_judge_calls_each_level_and_waits_while_unsure():
    """A probe at the earlier end's level, at the later end's, between them (a level of its own), and
    one whose few rounds cannot tell yet."""
    j = PairedMetricJudge()
    speeds = list(1 + 0.1 * np.linspace(0, 1, 6))
    for probe, want in ((100.0, Level.LOW), (110.0, Level.HIGH), (105.0, Level.NEITHER)):
        p = Paired.of(rounds({0: 100.0, 1: probe, 2: 110.0}, speeds, noise=0.002, seed=1), [0, 1, 2])
        groups, dof = p.noise_groups()
        sigma, dof = j.noise([(groups, dof)], p.log, 100.0)
        got = j.level_paired(p, 0, 1, 2, sigma, dof, 0.015)
        assert got.level is want, (probe, got)
        assert "paired over 6 rounds" in got.reason
    p = Paired.of(rounds({0: 100.0, 1: 104.0, 2: 110.0}, [1.0, 1.05], noise=0.02, seed=2), [0, 1, 2])
    assert j.level_paired(p, 0, 1, 2, 0.02, 2, 0.015).level is Level.UNSURE


def test_the_ends_differ_are_the_same_or_cannot_tell_yet():
    j = PairedMetricJudge()
    # 6 rounds: the first looks' share of the ends' false rate asks far more of a noise of 2 degrees
    # of freedom (hourly.analysis.judges.paired.ends_bound: ~180 standard errors after 3 rounds)
    apart = Paired.of(rounds({0: 100.0, 1: 110.0}, [1.0, 0.8, 1.2, 1.0, 0.9, 1.1], noise=0.002), [0, 1])
    assert j.ends_paired(apart, 0, 1, 0.002, 5, 0.015)[0] is True
    assert j.ends_paired(Paired.of(rounds({0: 100.0, 1: 110.0}, [1.0, 0.8, 1.2], noise=0.002), [0, 1]),
                         0, 1, 0.002, 2, 0.015)[0] is None  # after 3 rounds: not yet
    same = Paired.of(rounds({0: 100.0, 1: 100.0}, [1.0] * 12, noise=0.001, seed=3), [0, 1])
    assert j.ends_paired(same, 0, 1, 0.001, 11, 0.015)[0] is False
    close = Paired.of(rounds({0: 100.0, 1: 101.5}, [1.0, 1.1], noise=0.01, seed=4), [0, 1])
    assert j.ends_paired(close, 0, 1, 0.01, 1, 0.015)[0] is None
    # the last look: 1.5 % apart in 2 rounds of 1 % noise is neither shown nor ruled out — unknown,
    # not "the same" (a user was told "do not differ" of ends 7 % apart at 4.1 of 4.3 standard errors)
    assert j.ends_paired(close, 0, 1, 0.01, 1, 0.015, final=True)[0] is None
    with pytest.raises(UserError, match=r"were not shown to differ, nor to be alike \(\+1\.\d %, paired over 2 "
                                        r"rounds, .*\): the processes' spread hides what lies between them — "
                                        r"pass a larger --max-repeats"):
        j.check_ends_paired(close, None, j.ends_paired(close, 0, 1, 0.01, 1, 0.015, final=True)[1], False, False,
                            "the window")
    # alike at the last look by Wald's own bound: the same, as before, with the size ruled out
    outcome, words = j.ends_paired(same, 0, 1, 0.001, 11, 0.015, final=True)
    assert outcome is False and words.endswith("; by Wald's test no difference of 1.5 % or more"), words
    # a real -7 % step in 8 % noise per process, 5 rounds (the last look): neither shown nor ruled
    # out — "the likelier of the two" once called such ends the same (-7.1 % at 1.1 standard errors)
    for seed in range(5):
        noisy = Paired.of(rounds({0: 100.0, 1: 93.0}, [1.0] * 5, noise=0.08, seed=seed), [0, 1])
        sigma, dof = j.noise([noisy.noise_groups()], noisy.log, noisy.level[0])
        assert j.ends_paired(noisy, 0, 1, sigma, dof, ends_delta(noisy, sigma, 0.02, 5), final=True)[0] is None, seed


# -- crash windows -----------------------------------------------------------------------------------

def test_the_probe_after_a_crash_is_the_middle_of_the_larger_side():
    assert jump(0, 40, 19, range(1, 40)) == 29
    assert jump(0, 40, 30, range(1, 40)) == 15
    assert jump(0, 4, 2, [1, 3]) == 1  # no state well apart: the nearest left
    assert jump(0, 3, 1, []) is None


def test_each_edge_of_a_window_is_one_binary_search():
    """Every window inside every bracket of up to 33 states: the edges found exactly, each with at
    most ⌈log2⌉ of the states between the bracket and the crash asked."""
    for n in range(3, 34):
        for f, last in itertools.combinations_with_replacement(range(1, n - 1), 2):
            def outcome(i, f=f, last=last):
                return not f <= i <= last
            for c in range(f, last + 1):
                got, before, asked = first_crash(0, c, outcome)
                assert (got, before) == (f, f - 1) and asked <= max(1, math.ceil(math.log2(c))), (n, f, last, c)
                got, after, asked = last_crash(c, n - 1, outcome)
                assert (got, after) == (last, last + 1) and asked <= max(1, math.ceil(math.log2(n - 1 - c))), (n, f, last, c)
    w = CrashWindow(3, 7, 2, 8)
    assert w.exact_end and w.states == 5 and w.holds(5) and not w.holds(8)


def test_a_state_that_cannot_say_is_stepped_over():
    """A build failure inside the bracket says nothing of the crash: the search asks its neighbour."""
    def outcome(i):
        return None if i == 4 else not 3 <= i <= 6
    assert first_crash(0, 6, outcome)[0] == 3
    assert last_crash(3, 12, outcome)[0] == 6


def _judged(blocks: list[dict[int, float]]) -> tuple[bool | None, str, float, float]:
    """A window's ends judged as the bisection judges them: whether they differ, in words, their
    difference and one process's noise."""
    judge = PairedMetricJudge()
    p = Paired.of(blocks, [0, 1])
    sigma, dof = judge.noise([p.noise_groups()], p.log, p.level[0])
    outcome, words = judge.ends_paired(p, 0, 1, sigma, dof, ends_delta(p, sigma, 0.01, 20), final=True)
    return outcome, words, p.difference(0, 1), sigma


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["ratios", "differences"])
@pytest.mark.parametrize("step", [0.0, -0.07], ids=["alike", "a step"])
def test_values_near_the_floats_limit_are_judged_as_their_scaled_selves(sign, step):
    """Values near 1e308 (a metric in odd units): a round's mean, the levels (the middle two of an
    even count) and the Walsh averages would overflow to inf, and negative ones (compared as
    differences) read nan: "do not differ" for a -7 % step. Judged as the same values scaled down
    by 2**1023 (exactly), with no overflow on the way."""
    small = [{s: sign * v for s, v in b.items()} for b in rounds({0: 1.5, 1: 1.5 * (1 + step)}, [1.0] * 8, 0.002)]
    huge = [{s: v * 2.0 ** 1023 for s, v in b.items()} for b in small]
    assert max(abs(v) for b in huge for v in b.values()) > 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow on the way is a failure, not a warning
        got, want = _judged(huge), _judged(small)
        p = Paired.of(huge, [0, 1])
    assert got[0] is want[0] is (step != 0.0)
    assert got[1].split(", ")[1:] == want[1].split(", ")[1:]  # the same rounds and standard errors
    scale = 1.0 if sign > 0 else 2.0 ** 1023  # a ratio has no unit; a difference is in the metric's
    assert got[2] == pytest.approx(want[2] * scale, rel=1e-12) and got[3] == pytest.approx(want[3] * scale, rel=1e-12)
    assert all(math.isfinite(x) for x in p.level) and p.level[0] == pytest.approx(sign * 1.5 * 2.0 ** 1023, rel=0.01)
