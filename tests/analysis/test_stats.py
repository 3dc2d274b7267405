"""The statistics on hand-computable cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from analysis.stats import basic


def test_mean_std_is_the_sample_std_over_seeds():
    mean, std = basic.mean_std([0.5, 0.5625, 0.625])
    assert mean == pytest.approx(0.5625)
    assert std == pytest.approx(0.0625)  # ddof = 1


def test_one_seed_has_no_std_and_no_seeds_no_mean():
    assert math.isnan(basic.mean_std([0.7])[1])
    assert all(math.isnan(v) for v in basic.mean_std([]))


@pytest.mark.parametrize(
    ("better", "worse", "expected"),
    [
        ([0.9, 0.8, 0.85], [0.1, 0.2, 0.3], 1.0),
        ([0.5, 0.5], [0.5, 0.5], 0.5),
        ([0.1, 0.2], [0.8, 0.9], 0.0),
        ([1, 3], [2, 2], 0.5),
    ],
)
def test_probability_of_improvement(better, worse, expected):
    assert basic.probability_of_improvement(better, worse) == pytest.approx(expected)


def test_the_levels_of_a_mean_over_seeds():
    # Seed means 0.5, 1, 0: sample variance 0.25 (n - 1 = 2 df). Task variances 1/3, 0, 0 (ddof = 1),
    # mean 1/9, over 4 tasks: 1/36 per seed, with 3 df per seed.
    task_values = [np.array([1, 0, 1, 0]), np.ones(4), np.zeros(4)]
    seed = basic.seed_level([v.mean() for v in task_values])
    task = basic.task_level(task_values)
    assert (seed.variance, seed.df(3)) == (pytest.approx(0.25), 2)
    assert (task.variance, task.df(3)) == (pytest.approx(1 / 36), 9)
    assert math.isnan(basic.seed_level([0.7]).variance)


def test_the_interval_is_the_paired_t_interval_over_seeds():
    # Three per-seed differences, no task noise: exactly mean +- t_{2, 0.975} x s / sqrt(3).
    differences = [0.02, 0.05, 0.11]
    s = np.std(differences, ddof=1)
    levels = [basic.seed_level(differences), basic.task_level([np.full(128, d) for d in differences])]
    assert basic.half_width(levels, 3) == pytest.approx(4.302653 * s / math.sqrt(3), rel=1e-6)
    assert basic.half_width(levels, 3, 0.90) == pytest.approx(2.919986 * s / math.sqrt(3), rel=1e-6)


def test_the_interval_is_never_narrower_than_the_task_noise():
    # Every seed gains one task of four: equal differences (zero seed-level spread), task variance
    # 1/4 over 4 tasks per seed, 9 df: t_{9, 0.975} x sqrt(1/16 / 3).
    task_values = [np.array([1, 0, 0, 0])] * 3
    levels = [basic.seed_level([0.25] * 3), basic.task_level(task_values)]
    assert basic.half_width(levels, 3) == pytest.approx(2.262157 * math.sqrt(1 / 16 / 3), rel=1e-6)


def test_one_seed_has_no_interval_and_no_power():
    levels = [basic.seed_level([0.1]), basic.task_level([np.array([1.0, 0.0])])]
    assert math.isnan(basic.half_width(levels, 1))
    assert math.isnan(basic.minimum_detectable_effect(levels, 1))
    assert basic.seeds_needed(levels, 0.03) is None


def test_minimum_detectable_effect_is_the_power_of_the_t_test():
    # Many degrees of freedom: the normal (z_0.975 + z_0.8) = 2.801585 standard errors.
    many = [basic.Level(1e-4, 1e6, 0.0)]
    assert basic.minimum_detectable_effect(many, 2) == pytest.approx(2.801585 * math.sqrt(1e-4 / 2), rel=1e-4)
    # 3 seeds (2 df): the t test rejects with probability 0.8 at 5.653 standard errors.
    effect = basic.minimum_detectable_effect([basic.Level(0.0049)], 3)
    assert effect == pytest.approx(5.653 * math.sqrt(0.0049 / 3), rel=1e-3)
    critical = scipy.stats.t.ppf(0.975, 2)
    assert scipy.stats.nct.sf(critical, 2, effect / math.sqrt(0.0049 / 3)) == pytest.approx(0.8, abs=1e-3)


@pytest.mark.parametrize("seeds", [2, 3, 5, 12])
def test_seeds_needed_inverts_the_minimum_detectable_effect(seeds):
    levels = [basic.Level(0.0049), basic.Level(0.0009, 127.0, 0.0)]
    effect = basic.minimum_detectable_effect(levels, seeds)
    assert basic.seeds_needed(levels, effect * (1 + 1e-9)) == seeds
    assert basic.seeds_needed(levels, effect * 0.999) == seeds + 1


def test_seeds_needed_is_at_least_two_and_above_the_normal_approximation():
    assert basic.seeds_needed([basic.Level(1e-9)], 0.03) == 2
    # The normal approximation asks for ceil(2.801585^2 x 0.0049 / 0.03^2) = 43; the t test a little more.
    assert basic.seeds_needed([basic.Level(0.0049)], 0.03) == 45


@pytest.mark.parametrize(
    ("better", "worse", "p"),
    [([0.9, 0.8, 0.85], [0.1, 0.2, 0.3], 1 / 20), ([3, 4, 5], [1, 2, 3.5], 2 / 20)],
)
def test_improvement_p_value_is_the_one_sided_exact_mann_whitney(better, worse, p):
    # 3 vs 3 seeds: 20 equally likely rankings; winning all 9 pairs happens once, 8 or more twice.
    assert basic.improvement_p_value(better, worse) == pytest.approx(p)


def test_mean_half_width_is_the_t_interval():
    assert basic.mean_half_width(np.array([0.1]), 3)[0] == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-6)
    assert np.isnan(basic.mean_half_width(np.array([0.1]), 1)).all()


@pytest.mark.parametrize(
    "means, std, alpha, expected",
    [
        ([0.0, 0.0, 0.0, 1.0 / math.sqrt(3)], 1.0, 0.05, 45),  # k = 4, f = 0.25: Cohen's table, 45 per group
        ([-0.4, 0.4], 1.0, 0.05, 26),  # k = 2, f = 0.40: Cohen's table, 26 per group
    ],
)
def test_anova_seeds_needed_matches_cohens_power_tables(means, std, alpha, expected):
    assert float(np.std(means)) / std == pytest.approx(0.25 if len(means) == 4 else 0.40)
    assert basic.anova_seeds_needed(means, std, alpha) == expected


def test_anova_seeds_needed_grows_with_noise_and_a_stricter_alpha():
    means = [87.7, 95.2, 94.9, 89.0, 91.8]
    few = basic.anova_seeds_needed(means, 5.57, 0.05)
    assert few < basic.anova_seeds_needed(means, 5.57, 0.01) < basic.anova_seeds_needed(means, 11.0, 0.01)
    assert basic.anova_seeds_needed([1.0, 1.0], 2.0) is None
    with pytest.raises(ValueError, match="positive std"):
        basic.anova_seeds_needed(means, 0.0)
