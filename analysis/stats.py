"""Small pure statistics over seeds and evaluation tasks.

Conventions as in rliable: interval estimates by bootstrap, stratified over seeds and the held-out
evaluation tasks; the probability of improvement from the Mann-Whitney U statistic. rliable itself
does not import with pandas 3 (FACTS.md), so these use scipy.stats and numpy directly.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.stats

CONFIDENCE = 0.95
RESAMPLES = 2000


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1) over seeds, as papers report them.

    The std of a single seed is NaN (undefined), not 0; the mean of no seeds is NaN.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan")
    std = float(values.std(ddof=1)) if values.size > 1 else float("nan")
    return float(values.mean()), std


def task_bootstrap(
    task_success: Sequence[np.ndarray], rng: np.random.Generator, resamples: int = RESAMPLES
) -> np.ndarray:
    """Bootstrap distribution of the mean success: resample seeds, then tasks within each seed.

    ``task_success[s]`` holds seed s's per-task outcomes (any length >= 1). Each of the
    ``resamples`` draws picks as many seeds as there are, with replacement, then for each picked
    seed as many of its tasks, with replacement, and averages the per-seed means. Returns shape
    ``(resamples,)``. scipy.stats.bootstrap resamples one level only, hence numpy here.

    Resampling n tasks only matters through how often each distinct outcome is drawn, a
    multinomial, so those counts are drawn directly: exact, and independent of the task count.
    """
    if len(task_success) == 0 or min(len(outcomes) for outcomes in task_success) == 0:
        raise ValueError("task_bootstrap needs at least one seed and one task per seed")
    seeds = len(task_success)
    picked = rng.integers(seeds, size=(resamples, seeds))  # (draws, seed slots)
    slot_means = np.empty((resamples, seeds))
    for seed, outcomes in enumerate(task_success):
        values, counts = np.unique(np.asarray(outcomes, dtype=float), return_counts=True)
        slots = picked == seed
        drawn = rng.multinomial(counts.sum(), counts / counts.sum(), size=int(slots.sum()))
        slot_means[slots] = drawn @ values / counts.sum()
    return slot_means.mean(axis=1)


def seed_bootstrap(values: Sequence[float], rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """Bootstrap distribution of the mean over seeds (one value per seed), via scipy.stats.bootstrap.

    Used where no per-task outcomes exist (diagnostics, runs without outcome files). Fewer than two
    seeds give NaN draws: one seed says nothing about the spread.
    """
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return np.full(resamples, np.nan)
    result = scipy.stats.bootstrap(
        (values,), np.mean, n_resamples=resamples, method="percentile", rng=rng, vectorized=True
    )
    return result.bootstrap_distribution


def percentile_interval(draws: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The central ``confidence`` interval of bootstrap draws; (NaN, NaN) when the draws are NaN."""
    if np.isnan(draws).any():
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(draws, [tail, 100.0 - tail])
    return float(low), float(high)


def probability_of_improvement(better: Sequence[float], worse: Sequence[float]) -> float:
    """P(X > Y) + P(X = Y) / 2 for X from ``better``'s seeds and Y from ``worse``'s (rliable's
    definition), i.e. the Mann-Whitney U statistic over the number of pairs."""
    better = np.asarray(better, dtype=float)
    worse = np.asarray(worse, dtype=float)
    if better.size == 0 or worse.size == 0:
        return float("nan")
    statistic = scipy.stats.mannwhitneyu(better, worse, alternative="two-sided").statistic
    return float(statistic) / (better.size * worse.size)
