"""Small pure statistics over seeds and evaluation tasks.

Conventions as in rliable: interval estimates by bootstrap, stratified over seeds and the held-out
evaluation tasks; the probability of improvement from the Mann-Whitney U statistic. rliable itself
does not import with pandas 3 (FACTS.md), so these use scipy.stats and numpy directly.

A difference between two cells that share seeds (same environment and scale: same starting
policy, task order and evaluation tasks per seed) is estimated from paired differences: the
bootstrap of ``task_bootstrap`` over the per-task differences resamples seeds jointly for both
cells and tasks jointly within a seed. Power is stated from the same two variance levels
(``Variance``) under the normal approximation of that interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.stats

CONFIDENCE = 0.95
RESAMPLES = 2000
ALPHA = 0.05
POWER = 0.8
DETECTION_TARGETS = (0.03, 0.05)
"""Differences (success units) whose seed counts every comparison states: 3 and 5 points."""
EQUIVALENCE_MARGIN = 0.03
"""The margin of "does not help" (two one-sided tests): a gain under 3 points counts as none."""


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
    task_values: Sequence[np.ndarray], rng: np.random.Generator, resamples: int = RESAMPLES
) -> np.ndarray:
    """Bootstrap distribution of the mean over seeds of per-task values: resample seeds, then tasks
    within each seed.

    ``task_values[s]`` holds seed s's value per evaluation task (any length >= 1): one cell's
    success per task, or the paired differences of two cells on the same tasks, in which case
    seeds and tasks are resampled jointly for both cells. Each of the ``resamples`` draws picks as
    many seeds as there are, with replacement, then for each picked seed as many of its tasks, with
    replacement, and averages the per-seed means. Returns shape ``(resamples,)``.
    scipy.stats.bootstrap resamples one level only, hence numpy here.

    Resampling n tasks only matters through how often each distinct value is drawn, a
    multinomial, so those counts are drawn directly: exact, and independent of the task count.
    """
    if len(task_values) == 0 or min(len(values) for values in task_values) == 0:
        raise ValueError("task_bootstrap needs at least one seed and one task per seed")
    seeds = len(task_values)
    picked = rng.integers(seeds, size=(resamples, seeds))  # (draws, seed slots)
    slot_means = np.empty((resamples, seeds))
    for seed, per_task in enumerate(task_values):
        values, counts = np.unique(np.asarray(per_task, dtype=float), return_counts=True)
        slots = picked == seed
        drawn = rng.multinomial(counts.sum(), counts / counts.sum(), size=int(slots.sum()))
        slot_means[slots] = drawn @ values / counts.sum()
    return slot_means.mean(axis=1)


def seed_bootstrap(values: Sequence[float], rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """Bootstrap distribution of the mean over seeds (one value per seed), via scipy.stats.bootstrap.

    Used where no per-task outcomes exist (diagnostics, areas under the curve, runs without outcome
    files); given per-seed differences of two cells it is the seed-paired bootstrap. Fewer than two
    seeds give NaN draws: one seed says nothing about the spread.
    """
    values = np.asarray(values, dtype=float)
    if values.size < 2 or np.isnan(values).any():
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
    definition), i.e. the Mann-Whitney U statistic over the number of pairs: the fraction of
    seed pairs in which ``better`` wins, not the probability that it is the better method."""
    better = np.asarray(better, dtype=float)
    worse = np.asarray(worse, dtype=float)
    if better.size == 0 or worse.size == 0:
        return float("nan")
    statistic = scipy.stats.mannwhitneyu(better, worse, alternative="two-sided").statistic
    return float(statistic) / (better.size * worse.size)


def improvement_p_value(better: Sequence[float], worse: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney p of ``better > worse`` over seeds: how often a U statistic at
    least this large arises when the methods do not differ (3 vs 3 seeds, 8 of 9 pairs won: 0.10)."""
    better = np.asarray(better, dtype=float)
    worse = np.asarray(worse, dtype=float)
    if better.size == 0 or worse.size == 0:
        return float("nan")
    return float(scipy.stats.mannwhitneyu(better, worse, alternative="greater", method="exact").pvalue)


@dataclass(frozen=True)
class Variance:
    """Variance of one seed's mean over its evaluation tasks (a cell's success, or a paired
    difference), in success units squared, split in its two levels.

    ``seed``: between seeds, beyond what the task sample explains (starting policy, training noise);
    ``task``: of one task's value within a seed; ``tasks``: tasks per seed. A seed's mean then has
    variance ``seed + task / tasks`` (``per_seed``). Without per-task values, ``task`` is 0 and
    ``seed`` holds the whole variance.
    """

    seed: float
    task: float
    tasks: float

    @property
    def per_seed(self) -> float:
        return self.seed + self.task / self.tasks


def variance_components(task_values: Sequence[np.ndarray]) -> Variance:
    """The two levels from per-task values per seed (method of moments, one-way random effects).

    The within-seed variance is the mean over seeds of each seed's task variance (ddof = 1); the
    variance of the seed means (ddof = 1) exceeds the seed level by within / tasks, which is taken
    off (floored at 0). One seed leaves the seed level NaN.
    """
    values = [np.asarray(v, dtype=float) for v in task_values]
    tasks = float(np.mean([v.size for v in values]))
    within = float(np.mean([v.var(ddof=1) if v.size > 1 else 0.0 for v in values]))
    means = np.array([v.mean() for v in values])
    if means.size < 2:
        return Variance(float("nan"), within, tasks)
    return Variance(max(0.0, float(means.var(ddof=1)) - within / tasks), within, tasks)


def seed_variance(values: Sequence[float]) -> Variance:
    """The variance of one value per seed, all of it at the seed level (NaN below two seeds)."""
    values = np.asarray(values, dtype=float)
    seed = float(values.var(ddof=1)) if values.size > 1 else float("nan")
    return Variance(seed, 0.0, 1.0)


def _z_sum(alpha: float, power: float) -> float:
    return float(scipy.stats.norm.ppf(1.0 - alpha / 2.0) + scipy.stats.norm.ppf(power))


def minimum_detectable_effect(standard_error: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference that a two-sided ``alpha`` interval excludes zero for with
    probability ``power``, given the standard error of the estimate (normal approximation:
    (z_{1-alpha/2} + z_power) * standard_error, 2.80 standard errors at 0.05 and 80%)."""
    return _z_sum(alpha, power) * standard_error


def seeds_needed(per_seed_variance: float, effect: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Seeds whose mean has a ``minimum_detectable_effect`` of ``effect`` when one seed's value has
    ``per_seed_variance`` (at least 2); None when the variance is unknown."""
    if math.isnan(per_seed_variance):
        return None
    return max(2, math.ceil(_z_sum(alpha, power) ** 2 * per_seed_variance / effect**2))


def mean_half_width(std: np.ndarray, n: int, confidence: float = CONFIDENCE) -> np.ndarray:
    """Half width of the t interval of a mean over ``n`` seeds with sample std ``std`` (NaN below 2)."""
    if n < 2:
        return np.full(np.shape(std), np.nan)
    return scipy.stats.t.ppf(0.5 + confidence / 2.0, n - 1) * np.asarray(std, dtype=float) / math.sqrt(n)
