"""The statistics on hand-computable cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from analysis import stats


def test_mean_std_is_the_sample_std_over_seeds():
    mean, std = stats.mean_std([0.5, 0.5625, 0.625])
    assert mean == pytest.approx(0.5625)
    assert std == pytest.approx(0.0625)  # ddof = 1


def test_one_seed_has_no_std_and_no_seeds_no_mean():
    assert math.isnan(stats.mean_std([0.7])[1])
    assert all(math.isnan(v) for v in stats.mean_std([]))


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
    assert stats.probability_of_improvement(better, worse) == pytest.approx(expected)


def _seeds(rate: float, tasks: int, count: int = 3) -> list[np.ndarray]:
    solved = int(round(rate * tasks))
    return [np.r_[np.ones(solved), np.zeros(tasks - solved)] for _ in range(count)]


def test_task_bootstrap_interval_contains_the_mean_and_shrinks_with_more_tasks():
    widths = []
    for tasks in (16, 64, 256):
        task_success = _seeds(0.75, tasks)
        low, high = stats.percentile_interval(stats.task_bootstrap(task_success, np.random.default_rng(0)))
        assert low <= 0.75 <= high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2] > 0


def test_task_bootstrap_resamples_seeds_too():
    # Every task identical within a seed: only the seed level can vary the mean.
    task_success = [np.ones(10), np.zeros(10), np.ones(10)]
    draws = stats.task_bootstrap(task_success, np.random.default_rng(1))
    assert set(np.round(draws * 3).astype(int)) == {0, 1, 2, 3}
    assert draws.mean() == pytest.approx(2 / 3, abs=0.02)


def test_task_bootstrap_handles_seeds_with_different_task_counts():
    draws = stats.task_bootstrap([np.ones(4), np.ones(9)], np.random.default_rng(2))
    assert np.all(draws == 1.0)


def test_seed_bootstrap_needs_two_seeds():
    assert np.isnan(stats.seed_bootstrap([0.5], np.random.default_rng(0))).all()
    low, high = stats.percentile_interval(stats.seed_bootstrap([0.4, 0.5, 0.6], np.random.default_rng(0)))
    assert 0.4 <= low <= 0.5 <= high <= 0.6


def test_variance_components_split_seed_and_task_levels():
    # Within seeds: task variances 1/3, 0, 0 (ddof = 1), mean 1/9. Seed means 0.5, 1, 0 vary by 0.25,
    # of which (1/9) / 4 tasks is task noise: the seed level is 0.25 - 1/36 = 2/9.
    variance = stats.variance_components([np.array([1, 0, 1, 0]), np.ones(4), np.zeros(4)])
    assert variance.task == pytest.approx(1 / 9)
    assert variance.seed == pytest.approx(2 / 9)
    assert variance.tasks == 4
    assert variance.per_seed == pytest.approx(0.25)  # the variance of the seed means, as measured


def test_the_seed_level_is_not_negative_and_one_seed_leaves_it_unknown():
    noisy_tasks = stats.variance_components([np.array([1, 0, 1, 0]), np.array([0, 1, 0, 1])])
    assert noisy_tasks.seed == 0.0  # equal seed means: everything is task noise
    assert math.isnan(stats.variance_components([np.array([1, 0])]).seed)
    assert stats.seed_variance([0.5, 0.7, 0.6]).per_seed == pytest.approx(0.01)


def test_minimum_detectable_effect_and_seeds_needed():
    # (z_0.975 + z_0.8) = 1.959964 + 0.841621 = 2.801585
    assert stats.minimum_detectable_effect(0.01) == pytest.approx(0.02801585, rel=1e-6)
    # 2.801585^2 x 0.0049 / 0.03^2 = 42.73 -> 43 seeds; a tiny variance still needs 2
    assert stats.seeds_needed(0.0049, 0.03) == 43
    assert stats.seeds_needed(1e-9, 0.03) == 2
    assert stats.seeds_needed(float("nan"), 0.03) is None


@pytest.mark.parametrize(
    ("better", "worse", "p"),
    [([0.9, 0.8, 0.85], [0.1, 0.2, 0.3], 1 / 20), ([3, 4, 5], [1, 2, 3.5], 2 / 20)],
)
def test_improvement_p_value_is_the_one_sided_exact_mann_whitney(better, worse, p):
    # 3 vs 3 seeds: 20 equally likely rankings; winning all 9 pairs happens once, 8 or more twice.
    assert stats.improvement_p_value(better, worse) == pytest.approx(p)


def test_mean_half_width_is_the_t_interval():
    assert stats.mean_half_width(np.array([0.1]), 3)[0] == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-6)
    assert np.isnan(stats.mean_half_width(np.array([0.1]), 1)).all()


def test_task_bootstrap_of_paired_differences_resamples_seeds_and_tasks_jointly():
    # Every seed: one task of four gains a success. A draw's mean is Binomial(8, 1/4) / 8 over two seeds.
    draws = stats.task_bootstrap([np.array([1, 0, 0, 0]), np.array([0, 0, 1, 0])], np.random.default_rng(3), 20_000)
    counts = np.bincount(np.round(draws * 8).astype(int), minlength=9) / draws.size
    assert counts == pytest.approx(scipy.stats.binom.pmf(range(9), 8, 0.25), abs=0.01)
