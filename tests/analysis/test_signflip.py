"""The exact sign-flip tests: hand-computed p-values, the group-sequential boundaries against a plain
loop, their level checked exactly over every sign pattern, intervals and the probability of improvement."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from analysis.stats import signflip


def test_p_value_by_hand():
    # magnitudes 0.1, 0.2, 0.05; observed sum 0.25. Pattern sums: +-0.1 +-0.2 +-0.05; those >= 0.25:
    # 0.35 and 0.25 (2 of 8).
    assert signflip.p_greater(np.array([0.1, 0.2, -0.05])) == pytest.approx(2 / 8)
    assert signflip.p_greater(np.array([0.1, 0.2, 0.05])) == pytest.approx(1 / 8)
    # ties count in: all zeros lean nowhere, p = 1
    assert signflip.p_greater(np.zeros(4)) == pytest.approx(1.0)


def test_the_testbed_sign_flip_p_value():
    # lambda0 = 0.5 against 0 on the annealed default, seeds 0-9: nine of ten seeds ahead, two-sided 0.037
    uniform = np.array([99.8, 98.2, 98.2, 95.3, 100.0, 86.7, 99.6, 99.2, 100.0, 100.0])
    episode = np.array([99.0, 63.5, 92.6, 98.6, 99.6, 78.9, 95.9, 97.3, 98.4, 98.6])
    assert 2 * signflip.p_greater((uniform - episode) / 100) == pytest.approx(0.037109375)


@pytest.mark.parametrize(("level", "fewest"), [(0.025, 6), (0.005, 8), (0.05, 5), (0.5, 1)])
def test_fewest_seeds(level, fewest):
    assert signflip.fewest_seeds(level) == fewest
    assert signflip.reachable(fewest, level)
    assert not signflip.reachable(fewest - 1, level)


def reference_crossing(x: np.ndarray, looks, max_seeds, level, spending) -> int:
    """The group-sequential test on one replicate by a plain loop over every sign pattern, each
    look's boundary the smallest observed-or-not sum whose alive tail fits the budget."""
    cumulative = signflip.SPENDING[spending](np.asarray(looks, float) / max_seeds, level)
    magnitudes = np.abs(x)
    n = looks[-1]
    patterns = list(itertools.product((1.0, -1.0), repeat=n))
    boundaries: list[float] = []
    spent = 0.0
    for k, seeds in enumerate(looks):
        sums = [sum(s * m for s, m in zip(p[:seeds], magnitudes[:seeds])) for p in patterns]
        alive = [
            all(sum(s * m for s, m in zip(p[:e], magnitudes[:e])) < b - 1e-9 for e, b in zip(looks[:k], boundaries))
            for p in patterns
        ]
        budget = cumulative[k] - spent
        candidates = sorted({round(v, 12) for v, a in zip(sums, alive) if a}, reverse=True)
        boundary, used = math.inf, 0.0
        for value in candidates:
            tail = sum(1 for v, a in zip(sums, alive) if a and v >= value - 1e-9) / len(patterns)
            if tail <= budget + 1e-12:
                boundary, used = value, tail
            else:
                break
        boundaries.append(boundary)
        spent += used
        if x[:seeds].sum() >= boundary - 1e-9:
            return k
    return len(looks)


@pytest.mark.parametrize("spending", ["obf", "pocock"])
@pytest.mark.parametrize("seed", range(3))
def test_group_sequential_boundaries_equal_a_plain_loop(spending, seed):
    rng = np.random.default_rng(seed)
    looks, level = (3, 5, 7), 0.2
    x = np.round(rng.normal(0.08, 0.1, (40, 7)), 3)
    x[0] = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]  # ties everywhere
    got = signflip.first_crossing(x, looks, 7, level, spending)
    expected = [reference_crossing(row, looks, 7, level, spending) for row in x]
    assert got.tolist() == expected
    assert (got < len(looks)).any() and (got == len(looks)).any()


@pytest.mark.parametrize("looks", [(8,), (3, 5, 8), (4, 6, 8)])
@pytest.mark.parametrize("level", [0.025, 0.1])
def test_the_level_holds_exactly_under_the_sharp_null(looks, level):
    # Given the magnitudes every sign pattern is equally likely: the share of patterns that cross at any
    # look is the test's exact size, and must not exceed the level.
    magnitudes = np.array([0.31, 0.02, 0.17, 0.17, 0.4, 0.08, 0.25, 0.11])
    every = np.array(list(itertools.product((1.0, -1.0), repeat=8))) * magnitudes
    crossed = signflip.first_crossing(every, looks, 8, level) < len(looks)
    assert crossed.mean() <= level + 1e-12
    assert crossed.mean() >= level / 2  # not empty: the budget is used


def test_monte_carlo_above_the_exact_limit_keeps_the_level():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 0.1, (300, signflip.EXACT_LIMIT + 2))
    rejected = signflip.shows_greater(x, 0.05)
    assert rejected.mean() < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)
    assert signflip.shows_greater(np.full((1, 22), 0.1), 0.05)[0]


def test_shift_interval():
    d = np.array([0.8, 34.7, 5.6, -3.3, 0.4, 7.8, 3.7, 1.9, 1.6, 1.4]) / 100
    low, high = signflip.shift_interval(d, 0.05)
    assert low < d.mean() < high
    assert low == pytest.approx(0.0, abs=0.005)  # p = 0.037 two-sided: zero just inside at 5%
    for shift, inside in ((low - 0.002, False), (low + 0.002, True), (high + 0.002, False), (high - 0.002, True)):
        shifted = (d - shift)[None]
        rejected = signflip.shows_greater(shifted, 0.025)[0] or signflip.shows_greater(-shifted, 0.025)[0]
        assert rejected != inside
    assert signflip.shift_interval(d[:5], 0.05) == (-1.0, 1.0)  # 2^-5 > 2.5%: nothing is ever rejected
    assert all(math.isnan(v) for v in signflip.shift_interval(np.array([]), 0.05))


def test_probability_of_improvement_and_its_sign_test_interval():
    d = np.array([0.1] * 9 + [-0.1])
    share, low, high = signflip.improvement(d, 0.05)
    exact = scipy.stats.binomtest(9, 10).proportion_ci(0.95, method="exact")
    assert share == pytest.approx(0.9)
    assert (low, high) == pytest.approx((exact.low, exact.high))
    share, low, high = signflip.improvement(np.array([0.1, 0.0, 0.0, -0.1]), 0.05)
    assert share == pytest.approx(0.5)  # ties half
    assert low == pytest.approx(scipy.stats.binomtest(1, 4).proportion_ci(0.95).low)
    assert high == pytest.approx(scipy.stats.binomtest(3, 4).proportion_ci(0.95).high)
