"""The test by betting on hand-computable sequences, and where no valid test can decide."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.stats import betting


def test_capital_by_hand():
    # Two differences of +0.5 against 0: y = 0.75, m' = 0.5. The plug-in stakes (5.88, then 4.53)
    # exceed the cap c / m' = 2, so each factor is 1 + 2 (0.75 - 0.5) = 1.5 for, 1 - 2 (0.25) = 0.5 against.
    stakes = betting.stakes(np.array([0.5, 0.5]), 0.05)
    assert stakes == pytest.approx(
        [
            math.sqrt(2 * math.log(20) / (0.25 * math.log(2))),
            math.sqrt(2 * math.log(20) / (0.1328125 * 2 * math.log(3))),
        ]
    )
    up, down = betting.capital(np.array([0.5, 0.5]), 0.0, 0.05)
    assert up == pytest.approx([1.5, 2.25]) and down == pytest.approx([0.5, 0.25])


@pytest.mark.parametrize(("gain", "shown"), [(0.28, True), (0.27, False)])
def test_equal_gains_need_28_points_with_15_seeds(gain, shown):
    # The capital of n equal differences +d against 0 is (1 + d)^n: >= 40 (2.5% a side) from d = 27.9 points.
    differences = np.full(15, gain)
    assert betting.capital(differences, 0.0, 0.025)[0][-1] == pytest.approx((1 + gain) ** 15)
    assert bool(betting.exceeds(differences, 0.0, 0.025)[-1]) is shown


@pytest.mark.parametrize(("seeds", "shown"), [(99, True), (98, False)])
def test_seeds_that_all_collapse_show_no_gain_only_from_99_seeds(seeds, shown):
    # All differences 0: against +3 points each factor is 1 / 0.97, and 0.97^-n >= 20 from n = 99.
    assert bool(betting.falls_short(np.zeros(seeds), 0.03, 0.05)[-1]) is shown


def test_the_interval_is_never_zero_width_and_holds_the_mean():
    low, high = betting.interval(np.zeros(15), 0.05)
    assert low < -0.1 and high > 0.1
    rng = np.random.default_rng(1)
    differences = rng.uniform(-0.2, 0.6, 12)
    low, high = betting.interval(differences, 0.05)
    assert low < differences.mean() < high


def test_a_null_outside_the_bounds_is_refused():
    with pytest.raises(ValueError, match="null mean must lie inside"):
        betting.capital(np.zeros(3), 1.0, 0.05)
