"""The round planner of a parallel bisection (issue 25 item 4): a round's W slots shared between
every open gap of every open interval (both steps' intervals in the same rounds), the samples a
verdict is expected to need measured at once. Pure: StepSearch over oracle levels, no I/O."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hourly.analysis.rounds import same_level, share_slots, verdict_samples
from hourly.analysis.step_search import StepSearch


def _levels(n: int, culprits: tuple[int, ...]) -> list[float]:
    """1.0 before the first culprit, 7 % down at the first and 3 % more at the second."""
    factors = (0.93, 0.97)
    return [math.prod(f for c, f in zip(culprits, factors, strict=False) if i >= c) for i in range(n)]


def _run(n: int, culprits: tuple[int, ...], workers: int, noise: float = 0.0, seed: int = 0):
    lv = _levels(n, culprits)
    rng = np.random.default_rng(seed)

    def f(i: int, c: int) -> list[float]:
        return list(lv[i] * (1 + noise * rng.standard_normal(c))) if noise else [lv[i]] * c
    built: set[int] = set()
    sizes: list[int] = []

    def many(reqs: dict[int, int]) -> dict[int, list[float] | None]:
        sizes.append(len(reqs))
        built.update(reqs)
        return {i: f(i, c) for i, c in reqs.items()}
    search = StepSearch(n, f, known={0: f(0, 3), n - 1: f(n - 1, 3)}, repeats=3, max_repeats=10)
    steps, rounds = search.run_rounds(many, workers)
    return [(s.lo, s.hi) for s in steps], rounds, len(built), sizes


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("n", [6, 9, 11])
def test_every_pair_of_steps_in_small_histories_is_found_exactly(n, workers):
    """Exhaustive: every two culprit positions of a small window, each step pinned to its own two
    states, never more than W states a round; with W > 1 never more rounds than one a state."""
    for c1, c2 in itertools.combinations(range(1, n), 2):
        steps, rounds, builds, sizes = _run(n, (c1, c2), workers)
        assert steps == [(c1 - 1, c1), (c2 - 1, c2)], (n, c1, c2, workers)
        assert max(sizes) <= workers and rounds == len(sizes)
        assert builds <= n - 2 + 2 and rounds <= n


@pytest.mark.parametrize("n", [40, 104])
def test_four_workers_take_fewer_rounds_than_one_on_two_steps(n):
    for c1, c2 in ((n // 5, n // 2), (n // 3, n - 3), (2, n // 2 + 1)):
        one = _run(n, (c1, c2), 1)
        four = _run(n, (c1, c2), 4)
        assert one[0] == four[0] == [(c1 - 1, c1), (c2 - 1, c2)]
        # both intervals in the same rounds: about log_5 of each part, far below one state a round
        assert four[1] < one[1] and four[1] <= 2 * math.ceil(math.log(n, 5)) + 2, (c1, c2, four[1], one[1])


# quick: seed 2 covers the same rounds against one state a round under the same noise; seeds 0 and 1
# are slow (CI runs all three, each once)
@pytest.mark.parametrize("seed", [pytest.param(s, marks=[pytest.mark.slow] if s != 2 else []) for s in range(3)])
def test_under_noise_the_rounds_name_the_same_steps_as_one_state_a_round(seed):
    one = _run(104, (43, 91), 1, noise=0.002, seed=seed)
    four = _run(104, (43, 91), 4, noise=0.002, seed=seed)
    assert one[0] == four[0] == [(42, 43), (90, 91)]
    assert four[1] < one[1]


def test_share_slots_minimises_the_largest_part_left():
    """Brute force over every split of k slots: the share leaves the smallest largest part."""
    for rooms in ((30, 10), (20, 20), (40, 3, 9), (1, 1, 50), (0, 7)):
        for k in range(0, 7):
            got = share_slots(list(rooms), k)
            assert sum(got) == min(k, sum(rooms)) and all(g <= r for g, r in zip(got, rooms, strict=True))

            def worst(share, rooms=rooms):
                return max(((r + 1) / (s + 1) for r, s in zip(rooms, share, strict=True) if r), default=0)
            best = min(worst(s) for s in itertools.product(*(range(r + 1) for r in rooms)) if sum(s) == sum(got))
            assert worst(got) == pytest.approx(best), (rooms, k, got)
    assert share_slots([5, 40], 1, first=0) == [1, 0]  # the gap the search waits on comes first


def test_same_level_is_the_likelier_of_no_step_and_a_step_of_delta():
    rng = np.random.default_rng(0)
    a = list(1000 + 2 * rng.standard_normal(6))
    b = list(1000 + 2 * rng.standard_normal(6))
    c = list(970 + 2 * rng.standard_normal(6))
    assert same_level(a, b, 15.0)
    assert not same_level(a, c, 15.0)
    assert not same_level([1000.0], [992.0], 15.0) and same_level([1000.0], [993.0], 15.0)


def test_verdict_samples_grow_with_the_noise_and_stay_within_the_cap():
    quiet = verdict_samples(1000.0, 930.0, 1.0, 20, 15.0, 3, 10)
    loud = verdict_samples(1000.0, 930.0, 8.0, 4, 15.0, 3, 10)
    assert 3 <= quiet <= loud <= 10
    assert verdict_samples(1000.0, 930.0, 500.0, 4, 15.0, 3, 10) == 10
