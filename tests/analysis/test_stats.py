"""The statistics on hand-computable cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

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
