"""The difference of two cells' means as arrays in, numbers out (like rliable): paired by seed (and
task), or unpaired by Welch's combination, with its t interval, power and P(a > b) over seeds.

No I/O and no cell types: ``analysis.runs.cells.compare`` finds which seeds and tasks of two cells pair
and calls ``paired`` or ``unpaired``. The noise levels and their t quantiles are ``analysis.stats.basic``'
(Eq. numbers: docs/statistics.md).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.stats

from analysis.stats import basic

PAIRED_TASKS, PAIRED_SEEDS, UNPAIRED = "paired by seed and task", "paired by seed", "unpaired"


@dataclass(frozen=True)
class Comparison:
    """``a`` against ``b`` on one measure: the difference of their means, how it was paired, the
    noise levels its t interval and its power come from (``basic.half_width``), and P(a > b) over
    seeds."""

    estimate: float
    """Mean of a minus mean of b, in success units (over the shared seeds when paired)."""
    pairing: str
    """``PAIRED_TASKS``, ``PAIRED_SEEDS`` or ``UNPAIRED``."""
    seeds: int
    """Seeds behind the estimate: the shared ones when paired, the smaller cell's when not."""
    variance: float
    """Variance of one seed's contribution to the difference (the seed level; paired: of a seed's
    difference; unpaired: the Welch combination of both cells'); NaN with one seed."""
    standard_error: float
    """Of the estimate, at the level that sets the 95% interval."""
    probability_of_improvement: float
    """P(a > b) over all seed pairs (rliable): the fraction of seed pairs a wins, ties half."""
    p_value: float
    """One-sided exact Mann-Whitney p of a > b over seeds (``basic.improvement_p_value``)."""
    levels: tuple[basic.Level, ...] = ()
    """The seed level, and the task level where both cells have per-task outcomes."""
    cells: tuple[Hashable, ...] = ()
    """The keys of the two cells compared (``analysis.runs.cells.compare``): which cells a decision about it
    needs more seeds of."""
    differences: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    """``(seeds,)`` a - b per seed in seed order, what a verdict's test reads (``analysis.stats.sequential``):
    paired by seed, or unpaired, the k-th seed of a against the k-th of b (independent cells)."""

    def interval(self, confidence: float = basic.CONFIDENCE) -> tuple[float, float]:
        """NaN with one seed: no seed-level variance, so no interval (not a task-level-only one)."""
        half = basic.half_width(self.levels, self.seeds, confidence)
        return self.estimate - half, self.estimate + half

    @property
    def low(self) -> float:
        return self.interval()[0]

    @property
    def high(self) -> float:
        return self.interval()[1]

    @property
    def estimable(self) -> bool:
        return not math.isnan(self.low)

    @property
    def minimum_detectable_effect(self) -> float:
        """At 80% power and alpha 0.05 with these seeds (``basic.minimum_detectable_effect``)."""
        return basic.minimum_detectable_effect(self.levels, self.seeds)

    def seeds_needed(self, effect: float) -> int | None:
        """Seeds (per cell) that would detect a true difference of ``effect`` at 80% power."""
        return basic.seeds_needed(self.levels, effect)


def power_line(comparisons: Sequence[Comparison]) -> str:
    """One plain-text sentence on the power of ``comparisons``: the smallest difference they detect
    at 80% power and alpha 0.05 with the seeds they have, and the seeds each target would need."""
    known = [c for c in comparisons if not math.isnan(c.minimum_detectable_effect)]
    if not known:
        return "Power: not estimable (a comparison needs two seeds: one seed has no seed-level variance)."
    seeds = sorted({c.seeds for c in known})
    pairings = sorted({c.pairing for c in known})
    effects = [100 * c.minimum_detectable_effect for c in known]
    needs = []
    for target in basic.DETECTION_TARGETS:
        counts = [n for n in (c.seeds_needed(target) for c in known) if n is not None]
        if counts:
            needs.append(f"{100 * target:g} points needs {_span(counts, '{:d}')} seeds")
    return (
        f"Power (80%, two-sided alpha 0.05, t test with the measured seed- and task-level variance; "
        f"{', '.join(pairings)}): with {_span(seeds, '{:d}')} seeds the smallest detectable difference is "
        f"{_span(effects, '{:.1f}')} points; " + ", ".join(needs) + "."
    )


def _span(values: Sequence[float], form: str) -> str:
    low, high = min(values), max(values)
    return form.format(low) if form.format(low) == form.format(high) else f"{form.format(low)}-{form.format(high)}"


def paired(
    values_a: np.ndarray,
    values_b: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    task_differences: Sequence[np.ndarray] | None = None,
) -> Comparison:
    """``values_a[i] - values_b[j]`` for each index pair ``(i, j)`` of ``pairs`` (the seeds both cells
    ran, in seed order), with the seed level of these per-seed differences (n - 1 degrees of
    freedom) and, where ``task_differences`` gives per pair a's minus b's success on each evaluation
    task, the task level of those. P(a > b) and its p read every seed of ``values_a`` and ``values_b``."""
    differences = np.array([values_a[i] - values_b[j] for i, j in pairs])
    levels: tuple[basic.Level, ...] = (basic.seed_level(differences),)
    if task_differences is not None:
        levels += (basic.task_level(list(task_differences)),)
    pairing = PAIRED_TASKS if task_differences is not None else PAIRED_SEEDS
    return _comparison(float(differences.mean()), pairing, values_a, values_b, levels, differences)


def unpaired(
    values_a: np.ndarray,
    levels_a: Sequence[basic.Level],
    values_b: np.ndarray,
    levels_b: Sequence[basic.Level],
) -> Comparison:
    """Mean of ``values_a`` minus mean of ``values_b`` (``(n_a,)``, ``(n_b,)``, each in seed order) of
    independent cells, with the ``welch`` combination of their levels; ``differences`` pairs the
    k-th seed of a with the k-th of b, over the smaller cell's seeds."""
    seeds = min(values_a.size, values_b.size)
    levels = welch(levels_a, values_a.size, levels_b, values_b.size)
    estimate = float(values_a.mean() - values_b.mean())
    return _comparison(estimate, UNPAIRED, values_a, values_b, levels, values_a[:seeds] - values_b[:seeds])


def _comparison(
    estimate: float,
    pairing: str,
    values_a: np.ndarray,
    values_b: np.ndarray,
    levels: tuple[basic.Level, ...],
    differences: np.ndarray,
) -> Comparison:
    seeds = differences.size
    return Comparison(
        estimate,
        pairing,
        seeds,
        levels[0].variance,
        binding_error(levels, seeds),
        basic.probability_of_improvement(values_a, values_b),
        basic.improvement_p_value(values_a, values_b),
        levels=levels,
        differences=differences,
    )


def welch(
    levels_a: Sequence[basic.Level], n_a: int, levels_b: Sequence[basic.Level], n_b: int
) -> tuple[basic.Level, ...]:
    """The levels of a difference of two independent means, as levels of one mean over
    min(n_a, n_b) seeds: variances add as var_a / n_a + var_b / n_b, degrees of freedom by
    Welch-Satterthwaite (the seed level) or summed (the task level); they grow with the seeds as if
    both cells gained seeds alike."""
    seeds = min(n_a, n_b)
    (seed_a, *task_a), (seed_b, *task_b) = levels_a, levels_b
    parts = (seed_a.variance / n_a, seed_b.variance / n_b)
    variance = sum(parts)  # NaN when a cell has one seed
    spread = parts[0] ** 2 / seed_a.df(n_a) + parts[1] ** 2 / seed_b.df(n_b) if seeds > 1 else math.nan
    df = variance**2 / spread if spread > 0 else float(n_a + n_b - 2)
    growth = df / (seeds - 1) if seeds > 1 else 1.0
    levels = [basic.Level(variance * seeds, growth, growth)]
    if task_a and task_b:
        df = task_a[0].df(n_a) + task_b[0].df(n_b)
        levels.append(basic.Level((task_a[0].variance / n_a + task_b[0].variance / n_b) * seeds, df / seeds, 0.0))
    return tuple(levels)


def binding_error(levels: Sequence[basic.Level], seeds: int) -> float:
    """The standard error of the level that sets the 95% half width (NaN with one seed)."""
    if any(math.isnan(level.variance) for level in levels):
        return math.nan
    quantile = 0.5 + basic.CONFIDENCE / 2.0
    binding = max(levels, key=lambda level: scipy.stats.t.ppf(quantile, level.df(seeds)) * level.standard_error(seeds))
    return binding.standard_error(seeds)
