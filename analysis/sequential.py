"""A group-sequential design over seeds: run seeds in rounds, test every comparison after each round
at a boundary that keeps the chance of a false decision over all looks at the nominal level.

Pure functions of arrays, no I/O (``gaca.orchestration.sequential`` runs the rounds, ``analysis.report``
states the design).

**Alpha spending.** The looks are planned in advance (``Schedule``): after n_1 < n_2 < ... < n_K = N
seeds, information fractions t_k = n_k / N (a mean over n seeds has information proportional to n).
A spending function alpha(t) says how much of the two-sided level has been used by fraction t
(Lan and DeMets 1983); the boundary c_k of look k is the normal quantile at which a Brownian
motion observed at t_1..t_k first leaves (-c_k, c_k) at look k with probability alpha(t_k) -
alpha(t_{k-1}) (``boundaries``, by numerical integration over the continuation region, as
Armitage, McPherson and Rowe 1969). The default is the O'Brien-Fleming-type function
alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)): it spends almost nothing at the first looks, so a
decision at 3 seeds needs an overwhelming difference, and the last look's boundary is close to the
fixed-n one (2.06 against 1.96 at the last of five equally spaced looks) -- the design loses almost no power against a
fixed design of the same maximum, which matters when the maximum is the budget. The Pocock-type
function alpha(t) = alpha ln(1 + (e - 1) t) spends evenly and stops earlier on large differences,
at the price of a wider last look (2.39 for five looks). Both are offered (``SPENDING``).

**Repeated confidence intervals** (Jennison and Turnbull 2000, ch. 9). At look k a comparison's
interval is the fixed-n paired interval of ``analysis.stats`` with its level replaced by the
look's nominal level 2 (1 - Phi(c_k)): the t quantile over the per-seed differences (n_k - 1
degrees of freedom), never narrower than the task-level one. All K intervals cover the true
difference together with probability 1 - alpha, so any rule that stops on what they show keeps
the error rate: a comparison "a > b" is decided ``HOLDS`` / ``CONTRADICTED`` when its interval
lies above / below zero, ``EQUIVALENT`` when it lies inside (-margin, +margin). A "does not help"
comparison (two one-sided tests) uses the boundaries of twice the level (5% per side, twice the
calibrated level below) and holds when the interval lies below +margin, is contradicted when it lies
above it.

**Small n.** The t quantile at the look's nominal level is the usual correction for an estimated
variance, but it assumes normal seed effects. With a learn-or-collapse seed effect (two-valued: a
run learns or collapses, independently per cell) the per-seed differences take three values, and
at the interim looks (5-12 seeds, few degrees of freedom, far tails) the t quantile is too small:
simulated with no true difference, the uncorrected design decides falsely in 5.45% of experiments
(looks 3, 6, 9, 12, 15; 100000 simulated experiments), the fixed-n interval at 15 seeds in 5.0%.
The design is therefore **calibrated by simulation** (``calibrate``): the level its boundaries
spend (``Schedule.spend``) is the largest, found by bisection, at which no regime of
``analysis.sequential_sim`` (learn-or-collapse with a pooled seed std of 35 points, independent
per cell or half shared; normal seed effects of 5.5 points) decides falsely in more than
``alpha`` of ``CALIBRATION_REPLICATES`` simulated experiments (common random numbers, a fixed
seed: the same design always gets the same level). For the default design it is 0.0415.
No comparison is decided before ``MIN_DECIDING_SEEDS`` seeds either: at 3 seeds, three equal
differences (probability 2 (p (1 - p))^3, 3% at p = 1/2) leave only task noise in the spread.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.stats

from analysis import stats

HOLDS, CONTRADICTED, EQUIVALENT, CONTINUE = "holds", "contradicted", "equivalent", "continue"
GREATER, NO_GAIN = "greater", "no gain"
"""The two kinds of comparison a claim makes: "a > b" (two-sided) and "a does not improve on b" (TOST)."""
FIRST_ROUND = 3
ROUND = 3
MAX_SEEDS = 15
"""Default design: 3 seeds, then 3 more per round, up to 15 (looks 3, 6, 9, 12, 15)."""
MIN_DECIDING_SEEDS = 5
"""No decision before this many seeds (see the module docstring)."""
CALIBRATION_REPLICATES = 20000
CALIBRATION_SEED = 20260
GRID = 801
"""Points of the integration grid over the continuation region of each look."""
BOUNDARY_CAP = 40.0
"""The boundary of a look that spends nothing (no decision possible there)."""


def obrien_fleming(fraction: np.ndarray, alpha: float) -> np.ndarray:
    """Lan-DeMets O'Brien-Fleming-type spending: 2 - 2 Phi(z_{1 - alpha/2} / sqrt(t)); 0 at t = 0."""
    t = np.asarray(fraction, dtype=float)
    with np.errstate(divide="ignore"):
        spent = 2.0 - 2.0 * scipy.stats.norm.cdf(scipy.stats.norm.ppf(1.0 - alpha / 2.0) / np.sqrt(t))
    return np.where(t > 0, spent, 0.0)


def pocock(fraction: np.ndarray, alpha: float) -> np.ndarray:
    """Lan-DeMets Pocock-type spending: alpha ln(1 + (e - 1) t)."""
    return alpha * np.log1p((math.e - 1.0) * np.asarray(fraction, dtype=float))


SPENDING: Mapping[str, Callable[[np.ndarray, float], np.ndarray]] = {"obf": obrien_fleming, "pocock": pocock}
DEFAULT_SPENDING = "obf"


def spending(name: str) -> Callable[[np.ndarray, float], np.ndarray]:
    if name not in SPENDING:
        raise ValueError(f"spending must be one of {sorted(SPENDING)}, got {name!r}")
    return SPENDING[name]


def boundaries(fractions: Sequence[float], alpha: float = stats.ALPHA, function: str = DEFAULT_SPENDING) -> np.ndarray:
    """Cached ``_boundaries`` (a design is asked for its boundaries at every look)."""
    return _boundaries(tuple(float(t) for t in fractions), float(alpha), function).copy()


@functools.lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float, function: str) -> np.ndarray:
    """Two-sided normal boundaries c_1..c_K for looks at information ``fractions`` (increasing, the
    last 1): P(|Z_j| < c_j for j < k, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1}) for Z_k =
    W(t_k) / sqrt(t_k), W a standard Brownian motion. Shape ``(K,)``; a look that spends (almost)
    nothing gets ``BOUNDARY_CAP``."""
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or not math.isclose(t[-1], 1.0):
        raise ValueError(f"information fractions must increase from above 0 to 1, got {list(t)}")
    spent = np.diff(np.r_[0.0, spending(function)(t, alpha)])
    result = np.empty(t.size)
    grid = np.zeros(1)  # W at the previous look: the origin, with mass 1
    density = np.ones(1)
    weights = np.ones(1)
    previous = 0.0
    for k, (fraction, target) in enumerate(zip(t, spent)):
        sd = math.sqrt(fraction - previous)
        mass = density * weights  # probability carried by each grid point of the continuation region
        root_t = math.sqrt(fraction)

        def exit_probability(
            c: float, root_t: float = root_t, mass: np.ndarray = mass, grid: np.ndarray = grid, sd: float = sd
        ) -> float:
            edge = c * root_t
            return float(mass @ (scipy.stats.norm.cdf((-edge - grid) / sd) + scipy.stats.norm.sf((edge - grid) / sd)))

        if target <= 1e-15 or exit_probability(BOUNDARY_CAP) >= target:
            c = BOUNDARY_CAP
        else:
            c = float(
                scipy.optimize.brentq(
                    lambda c, target=target: exit_probability(c) - target, 0.0, BOUNDARY_CAP, xtol=1e-10
                )
            )
        result[k] = c
        new_grid = np.linspace(-c * root_t, c * root_t, GRID) if c < BOUNDARY_CAP else np.linspace(-8, 8, GRID) * root_t
        step = new_grid[1] - new_grid[0]
        density = scipy.stats.norm.pdf((new_grid[:, None] - grid[None, :]) / sd) / sd @ mass
        weights = np.full(GRID, step)
        weights[[0, -1]] = step / 2.0  # trapezoid
        grid, previous = new_grid, fraction
    return result


@dataclass(frozen=True)
class Schedule:
    """The planned looks: seeds after each round, the spending function, the level and the margin.
    Written once when a sequential block starts and never changed (a different one is refused)."""

    looks: tuple[int, ...]
    spending: str = DEFAULT_SPENDING
    alpha: float = stats.ALPHA
    margin: float = stats.EQUIVALENCE_MARGIN
    min_deciding: int = MIN_DECIDING_SEEDS
    spend: float | None = None
    """The level the boundaries spend (``calibrate``; at most ``alpha``); None: ``alpha`` itself."""

    def __post_init__(self) -> None:
        spending(self.spending)
        if len(self.looks) == 0 or self.looks[0] < 2 or any(b <= a for a, b in zip(self.looks, self.looks[1:])):
            raise ValueError(f"looks must be increasing seed counts from 2, got {list(self.looks)}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), got {self.alpha}")
        if not self.margin >= 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")

    @classmethod
    def rounds(
        cls, max_seeds: int = MAX_SEEDS, first: int = FIRST_ROUND, step: int = ROUND, **options: object
    ) -> Schedule:
        """Looks at ``first``, then every ``step`` more seeds, the last at ``max_seeds``."""
        if first < 2:
            raise ValueError(f"the first round must have at least 2 seeds, got {first}")
        if max_seeds < first:
            raise ValueError(f"--max-seeds must be at least the first round's {first} seeds, got {max_seeds}")
        if step < 1:
            raise ValueError(f"a round must add at least 1 seed, got {step}")
        looks = list(range(first, max_seeds + 1, step))
        if looks[-1] != max_seeds:
            looks.append(max_seeds)
        return cls(tuple(looks), **options)  # type: ignore[arg-type]

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    @property
    def fractions(self) -> np.ndarray:
        return np.asarray(self.looks, dtype=float) / self.max_seeds

    def deciding(self) -> np.ndarray:
        """Which looks may decide (at least ``min_deciding`` seeds, and always the last)."""
        may = np.asarray(self.looks) >= self.min_deciding
        may[-1] = True
        return may

    @property
    def spent_level(self) -> float:
        return self.alpha if self.spend is None else self.spend

    def calibrated(self) -> Schedule:
        """This design with the level its boundaries spend calibrated by simulation (``calibrate``)."""
        return dataclasses.replace(self, spend=calibrate(self))

    def boundaries(self, alpha: float | None = None) -> np.ndarray:
        """The normal boundary of each look; a look that may not decide spends nothing (its alpha
        passes to the first look that may)."""
        alpha = self.spent_level if alpha is None else alpha
        may = self.deciding()
        deciding = self.fractions[may]
        result = np.full(len(self.looks), BOUNDARY_CAP)
        # A look that may not decide constrains nothing, so the deciding looks form a design of their own.
        result[may] = boundaries(deciding, alpha, self.spending)
        return result

    def levels(self, kind: str = GREATER) -> np.ndarray:
        """The nominal two-sided level of each look's interval: 2 (1 - Phi(c_k)); for ``NO_GAIN`` the
        boundaries of twice the level (5% per side)."""
        alpha = self.spent_level if kind == GREATER else 2 * self.spent_level
        return 2.0 * scipy.stats.norm.sf(self.boundaries(alpha))

    def look_of(self, seeds: int) -> int | None:
        """The index of the look made at ``seeds`` seeds, None when none is planned there."""
        return self.looks.index(seeds) if seeds in self.looks else None

    def spent(self, looks_made: int, kind: str = GREATER) -> float:
        """Alpha spent by the first ``looks_made`` looks."""
        if looks_made == 0:
            return 0.0
        alpha = self.spent_level if kind == GREATER else 2 * self.spent_level
        made = self.deciding()
        made[looks_made:] = False
        deciding = self.fractions[made]
        return float(spending(self.spending)(deciding[-1:], alpha)[0]) if deciding.size else 0.0

    def tag(self) -> str:
        """The run tag and store record of the design: ``looks=3,6,9;spending=obf;alpha=0.05;...``."""
        return (
            f"looks={','.join(map(str, self.looks))};spending={self.spending};alpha={self.alpha:g};"
            f"margin={self.margin:g};min_deciding={self.min_deciding};spend={self.spent_level!r}"
        )

    @classmethod
    def from_tag(cls, text: str) -> Schedule:
        try:
            fields = dict(part.split("=", 1) for part in text.split(";"))
            return cls(
                tuple(int(n) for n in fields["looks"].split(",")),
                fields["spending"],
                float(fields["alpha"]),
                float(fields["margin"]),
                int(fields["min_deciding"]),
                float(fields["spend"]),
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"not a sequential design tag: {text!r} ({error})") from None


def half_widths(
    seed_variance: np.ndarray, task_variance: np.ndarray, seeds: int, tasks: float, level: float
) -> np.ndarray:
    """Half width of the repeated confidence interval at a look with two-sided nominal ``level``,
    vectorised: the larger of the seed-level t (``seeds - 1`` df) and the task-level t (``seeds
    (tasks - 1)`` df) times its standard error, as ``stats.half_width`` does per comparison.
    Shapes broadcast; NaN seed variance (one seed) gives NaN."""
    quantile = 1.0 - level / 2.0
    seed = scipy.stats.t.ppf(quantile, seeds - 1) * np.sqrt(np.asarray(seed_variance) / seeds)
    task = scipy.stats.t.ppf(quantile, seeds * (tasks - 1.0)) * np.sqrt(np.asarray(task_variance) / seeds)
    return np.maximum(seed, task)


def rci_half_width(levels: Sequence[stats.Level], seeds: int, level: float) -> float:
    """``stats.half_width`` of one comparison's levels at a look's nominal two-sided ``level``."""
    return stats.half_width(levels, seeds, 1.0 - level)


def decide(low: np.ndarray, high: np.ndarray, kind: str, margin: float) -> np.ndarray:
    """The decision from a repeated interval [low, high] (arrays): ``GREATER``: holds above zero,
    contradicted below, equivalent inside (-margin, margin), else continue; ``NO_GAIN``: holds below
    +margin, contradicted above it, else continue. NaN bounds continue."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    out = np.full(np.broadcast(low, high).shape, CONTINUE, dtype=object)
    if kind == GREATER:
        out[low > 0] = HOLDS
        out[high < 0] = CONTRADICTED
        out[(low > -margin) & (high < margin) & (out == CONTINUE)] = EQUIVALENT
    elif kind == NO_GAIN:
        out[high < margin] = HOLDS
        out[low > margin] = CONTRADICTED
    else:
        raise ValueError(f"kind must be {GREATER!r} or {NO_GAIN!r}, got {kind!r}")
    return out


@dataclass(frozen=True)
class Stopped:
    """The sequential procedure on simulated or measured arrays: per replicate, the look it stopped
    at (index, or the last), the decision, the seeds used and the interval it stopped with."""

    look: np.ndarray
    decision: np.ndarray
    seeds: np.ndarray
    low: np.ndarray
    high: np.ndarray


def run_sequential(
    differences: np.ndarray, task_variance: np.ndarray, tasks: float, schedule: Schedule, kind: str = GREATER
) -> Stopped:
    """The procedure on per-seed paired differences ``differences`` (replicates x max seeds) with
    each seed's task-level variance of its mean difference (the within-seed variance of its
    per-task differences over its ``tasks``; ``stats.task_level``), same shape: looks in order,
    each replicate stopping at its first decision. Vectorised over replicates."""
    differences = np.asarray(differences, dtype=float)
    replicates = differences.shape[0]
    levels = schedule.levels(kind)
    look = np.full(replicates, len(schedule.looks) - 1)
    decision = np.full(replicates, CONTINUE, dtype=object)
    low = np.full(replicates, np.nan)
    high = np.full(replicates, np.nan)
    open_ = np.ones(replicates, dtype=bool)
    for k, n in enumerate(schedule.looks):
        part = differences[:, :n]
        estimate = part.mean(axis=1)
        half = half_widths(part.var(axis=1, ddof=1), task_variance[:, :n].mean(axis=1), n, tasks, levels[k])
        made = decide(estimate - half, estimate + half, kind, schedule.margin)
        stop = open_ & (made != CONTINUE) if k < len(schedule.looks) - 1 else open_
        look[stop], decision[stop] = k, made[stop]
        low[stop], high[stop] = (estimate - half)[stop], (estimate + half)[stop]
        open_ &= ~stop
    seeds = np.asarray(schedule.looks)[look]
    return Stopped(look, decision, seeds, low, high)


def run_fixed(
    differences: np.ndarray,
    task_variance: np.ndarray,
    tasks: float,
    alpha: float = stats.ALPHA,
    margin: float = stats.EQUIVALENCE_MARGIN,
    kind: str = GREATER,
) -> np.ndarray:
    """The fixed-n decision on all seeds at once (the fixed-n interval of ``analysis.cells``)."""
    n = differences.shape[1]
    level = alpha if kind == GREATER else 2 * alpha
    estimate = differences.mean(axis=1)
    half = half_widths(differences.var(axis=1, ddof=1), task_variance.mean(axis=1), n, tasks, level)
    return decide(estimate - half, estimate + half, kind, margin)


def false_decision_rate(
    schedule: Schedule, replicates: int = CALIBRATION_REPLICATES, seed: int = CALIBRATION_SEED
) -> float:
    """The largest, over the regimes of ``analysis.sequential_sim``, share of simulated experiments
    without a true difference that ``schedule`` decides holds or contradicted."""
    from analysis.sequential_sim import REGIMES, TASKS, simulate

    worst = 0.0
    for number, regime in enumerate(REGIMES):
        differences, variances = simulate(
            np.random.default_rng([seed, number]), regime, 0.0, replicates, schedule.max_seeds
        )
        decision = run_sequential(differences, variances, TASKS, schedule).decision
        worst = max(worst, float(np.mean((decision == HOLDS) | (decision == CONTRADICTED))))
    return worst


def calibrate(schedule: Schedule, replicates: int = CALIBRATION_REPLICATES, steps: int = 10) -> float:
    """The largest level up to ``schedule.alpha`` whose boundaries keep ``false_decision_rate`` at
    or below ``alpha`` (bisection over ``steps`` halvings; the same draws at every step)."""
    return _calibrate(dataclasses.replace(schedule, spend=None), replicates, steps)


@functools.lru_cache(maxsize=32)
def _calibrate(schedule: Schedule, replicates: int, steps: int) -> float:
    if false_decision_rate(schedule, replicates) <= schedule.alpha:
        return schedule.alpha
    low, high = 0.0, schedule.alpha
    for _ in range(steps):
        middle = (low + high) / 2.0
        if false_decision_rate(dataclasses.replace(schedule, spend=middle), replicates) <= schedule.alpha:
            low = middle
        else:
            high = middle
    return low
