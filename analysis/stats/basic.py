"""Small pure statistics over seeds and evaluation tasks.

Conventions as in rliable where they hold with few seeds: the probability of improvement from the
Mann-Whitney U statistic; intervals are t intervals over seeds floored by the held-out evaluation
tasks (rliable's stratified bootstrap under-covers with 3 seeds, see below). rliable itself
does not import with pandas 3 (docs/dependencies.md), so these use scipy.stats and numpy directly.

A single cell's mean and a difference between two cells get a t interval (``Level``,
``half_width``); a difference's power is that of the same t test.

Why t and not the bootstrap for a difference: with n seeds the percentile bootstrap shrinks the
seed-level spread by sqrt((n - 1) / n) and uses normal quantiles, so with 3 seeds its paired
interval covered the true difference in 78-97% of simulated experiments. The paired t interval
over the per-seed differences (their sample variance, n - 1 degrees of freedom) is exact for
normal seed means whatever the split between seed and task noise, because each seed's difference
already carries its task noise. By chance a few seeds can agree more closely than their tasks
allow (three equal differences give a zero-width t interval), so the interval is also never
narrower than the task-level one (the within-seed task variance, n (tasks - 1) degrees of
freedom): the half width is the larger of the two. Satterthwaite degrees of freedom from the
estimated seed/task split were tried and rejected: the seed part is estimated as a difference of
the same n - 1 degree-of-freedom spread, and the interval covered 88% in simulation (false "holds"
up to 6%); the larger-of-two interval covered 94-99% (false "holds" at most 2.6%).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.stats
from numpy.typing import ArrayLike

CONFIDENCE = 0.95
ALPHA = 0.05
POWER = 0.8
DETECTION_TARGETS = (0.03, 0.05)
"""Differences (success units) whose seed counts every comparison states: 3 and 5 points."""
EQUIVALENCE_MARGIN = 0.03
"""The margin of "does not help" (two one-sided tests): a gain under 3 points counts as none."""


def mean_std(values: ArrayLike) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1) over seeds, as papers report them.

    The std of a single seed is NaN (undefined), not 0; the mean of no seeds is NaN.
    """
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return float("nan"), float("nan")
    std = float(array.std(ddof=1)) if array.size > 1 else float("nan")
    return float(array.mean()), std


def probability_of_improvement(better: ArrayLike, worse: ArrayLike) -> float:
    """P(X > Y) + P(X = Y) / 2 for X from ``better``'s seeds and Y from ``worse``'s (rliable's
    definition), i.e. the Mann-Whitney U statistic over the number of pairs: the fraction of
    seed pairs in which ``better`` wins, not the probability that it is the better method."""
    a, b = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
    if a.size == 0 or b.size == 0:
        return float("nan")
    statistic = scipy.stats.mannwhitneyu(a, b, alternative="two-sided").statistic
    return float(statistic) / (a.size * b.size)


def improvement_p_value(better: ArrayLike, worse: ArrayLike) -> float:
    """One-sided exact Mann-Whitney p of ``better > worse`` over seeds: how often a U statistic at
    least this large arises when the methods do not differ (3 vs 3 seeds, 8 of 9 pairs won: 0.10)."""
    a, b = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(scipy.stats.mannwhitneyu(a, b, alternative="greater", method="exact").pvalue)


@dataclass(frozen=True)
class Level:
    """One level of the noise of a mean over n seeds (of a cell, or of a paired difference): a seed's
    contribution has ``variance`` (success units squared), estimated with ``df_per_seed * n -
    df_lost`` degrees of freedom. The seed level (``seed_level``) has n - 1; the task level
    (``task_level``) n (tasks - 1)."""

    variance: float
    df_per_seed: float = 1.0
    df_lost: float = 1.0

    def standard_error(self, seeds: float) -> float:
        return math.sqrt(self.variance / seeds)

    def df(self, seeds: float) -> float:
        return self.df_per_seed * seeds - self.df_lost


def seed_level(values: ArrayLike) -> Level:
    """The spread of one value per seed (a cell's score, or a paired difference): sample variance
    (ddof = 1), n - 1 degrees of freedom; NaN below two seeds (one seed says nothing about it)."""
    array = np.asarray(values, dtype=float)
    return Level(float(array.var(ddof=1)) if array.size > 1 else float("nan"))


def task_level(task_values: Sequence[np.ndarray]) -> Level:
    """The part of a seed's mean that its task sample explains: the mean over seeds of each seed's
    task variance (ddof = 1) over the mean task count, with tasks - 1 degrees of freedom per seed."""
    values = [np.asarray(v, dtype=float) for v in task_values]
    tasks = float(np.mean([v.size for v in values]))
    within = float(np.mean([v.var(ddof=1) if v.size > 1 else 0.0 for v in values]))
    return Level(within / tasks, tasks - 1.0, 0.0)


def half_width(levels: Sequence[Level], seeds: float, confidence: float = CONFIDENCE) -> float:
    """Half width of the ``confidence`` interval of a mean over ``seeds`` seeds: the largest
    t_{df, (1 + confidence) / 2} x standard error over ``levels`` (a level of zero variance adds
    nothing); NaN when a level is unknown (one seed)."""
    if not levels or any(math.isnan(level.variance) for level in levels):
        return float("nan")
    quantile = 0.5 + confidence / 2.0
    return max(
        (
            float(scipy.stats.t.ppf(quantile, level.df(seeds))) * level.standard_error(seeds)
            for level in levels
            if level.variance > 0
        ),
        default=0.0,
    )


@functools.lru_cache(maxsize=1024)
def _detectable_errors(df: float, alpha: float, power: float) -> float:
    """The true difference, in standard errors, that a two-sided t test with ``df`` degrees of freedom
    rejects with probability ``power`` (noncentral t; 2.80 with many degrees of freedom, 5.65 with 2)."""
    critical = scipy.stats.t.ppf(1.0 - alpha / 2.0, df)

    def shortfall(noncentrality: float) -> float:
        # The lower tail is negligible here, and scipy returns NaN for it far out.
        lower = np.nan_to_num(scipy.stats.nct.cdf(-critical, df, noncentrality))
        return float(scipy.stats.nct.sf(critical, df, noncentrality) + lower) - power

    return float(scipy.optimize.brentq(shortfall, 0.0, 100.0))


def minimum_detectable_effect(
    levels: Sequence[Level], seeds: float, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The smallest true difference whose ``half_width`` interval (at 1 - ``alpha``) excludes zero with
    probability ``power``, over ``seeds`` seeds: per level, the noncentral-t multiple of its standard
    error, the largest of them; NaN when a level is unknown."""
    if not levels or any(math.isnan(level.variance) for level in levels) or seeds < 2:
        return float("nan")
    return max(
        (
            _detectable_errors(level.df(seeds), alpha, power) * level.standard_error(seeds)
            for level in levels
            if level.variance > 0
        ),
        default=0.0,
    )


def seeds_needed(levels: Sequence[Level], effect: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The fewest seeds (at least 2) whose ``minimum_detectable_effect`` is at most ``effect``; None when
    a level is unknown. Starts from the normal approximation, which never asks for more."""
    if not levels or any(math.isnan(level.variance) for level in levels):
        return None
    z_sum = scipy.stats.norm.ppf(1.0 - alpha / 2.0) + scipy.stats.norm.ppf(power)
    seeds = max(2, math.ceil(z_sum**2 * max(level.variance for level in levels) / effect**2))
    while minimum_detectable_effect(levels, seeds, alpha, power) > effect:
        seeds += 1
    return seeds


def anova_seeds_needed(
    means: Sequence[float], pooled_std: float, alpha: float = ALPHA, power: float = POWER, limit: int = 10_000
) -> int | None:
    """The fewest seeds per setting at which a one-way ANOVA across settings with these true ``means``
    and within-setting std ``pooled_std`` rejects at ``alpha`` with probability ``power``: the
    noncentral F with noncentrality k n f^2, Cohen's f = std(means, ddof=0) / pooled_std (k = 4
    settings, f = 0.25, alpha 0.05, power 0.8: 45, Cohen's table). None when the means are equal or
    more than ``limit`` seeds would be needed."""
    k = len(means)
    if k < 2 or not pooled_std > 0:
        raise ValueError(f"need two or more means and a positive std, got {len(means)} means and std {pooled_std!r}")
    f_squared = float(np.var(means)) / pooled_std**2
    if f_squared == 0:
        return None
    for n in range(2, limit + 1):
        df_within = k * (n - 1)
        critical = scipy.stats.f.ppf(1.0 - alpha, k - 1, df_within)
        if scipy.stats.ncf.sf(critical, k - 1, df_within, k * n * f_squared) >= power:
            return n
    return None


def mean_half_width(std: np.ndarray, n: int, confidence: float = CONFIDENCE) -> np.ndarray:
    """Half width of the t interval of a mean over ``n`` seeds with sample std ``std`` (NaN below 2)."""
    if n < 2:
        return np.full(np.shape(std), np.nan)
    return scipy.stats.t.ppf(0.5 + confidence / 2.0, n - 1) * np.asarray(std, dtype=float) / math.sqrt(n)
