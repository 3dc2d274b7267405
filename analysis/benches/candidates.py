"""The candidate tests of the sequential design, side by side on the same simulated worlds
(``analysis.benches.sequential``): each maps per-seed paired differences ``(replicates, max seeds)``
and a look schedule to the decision per replicate, stopping at the first look that decides.

- ``betting ...``: ``analysis.stats.betting`` (valid at every look for any bounded outcome), with the
  stake cap c and stakes for every seed count (the confidence sequence) or tuned to the budget.
- ``t repeated intervals``: the design this project used before, uncalibrated: Lan-DeMets
  O'Brien-Fleming-type alpha spending (Lan and DeMets 1983; boundaries by numerical integration
  over the continuation region, Armitage, McPherson and Rowe 1969) and at each look the paired t
  interval over the per-seed differences at the look's nominal level (Jennison and Turnbull 2000,
  ch. 9), never narrower than the task-level t interval; "does not help" at the boundaries of
  twice the level, as it was. The boundary family is two-sided alpha = 0.05 spent over both sides
  (2.064 at the last of five equal looks; the per-side 0.025 family gives 2.031, the classical
  O'Brien-Fleming test 2.040).
- ``t fixed-n``: the same t interval once, at the last look.

The t candidates assume normal seed means; they are here to show what validity costs, not offered.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import scipy.optimize
import scipy.stats

from analysis.stats import basic, sequential, signflip
from analysis.stats.sequential import CONTINUE, CONTRADICTED, EQUIVALENT, GREATER, HOLDS, Schedule

GRID = 801
"""Points of the integration grid over the continuation region of each look."""
BOUNDARY_CAP = 40.0
"""The boundary of a look that spends nothing (no decision possible there)."""
MIN_DECIDING_SEEDS = 5
"""The t design decided nothing before 5 seeds (three equal differences leave only task noise)."""


SPENDING = signflip.SPENDING
DEFAULT_SPENDING = signflip.DEFAULT_SPENDING
"""The spending functions (``analysis.stats.signflip``: Lan-DeMets, of a level a(1))."""


def spending(name: str) -> Callable[[np.ndarray, float], np.ndarray]:
    if name not in SPENDING:
        raise ValueError(f"spending must be one of {sorted(SPENDING)}, got {name!r}")
    return SPENDING[name]


def boundaries(fractions: Sequence[float], alpha: float = basic.ALPHA, function: str = DEFAULT_SPENDING) -> np.ndarray:
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


def half_widths(
    seed_variance: np.ndarray, task_variance: np.ndarray, seeds: int, tasks: float, level: float
) -> np.ndarray:
    """Half width of the repeated confidence interval at a look with two-sided nominal ``level``,
    vectorised: the larger of the seed-level t (``seeds - 1`` df) and the task-level t (``seeds
    (tasks - 1)`` df) times its standard error, as ``basic.half_width`` does per comparison.
    Shapes broadcast; NaN seed variance (one seed) gives NaN."""
    quantile = 1.0 - level / 2.0
    seed = scipy.stats.t.ppf(quantile, seeds - 1) * np.sqrt(np.asarray(seed_variance) / seeds)
    task = scipy.stats.t.ppf(quantile, seeds * (tasks - 1.0)) * np.sqrt(np.asarray(task_variance) / seeds)
    return np.maximum(seed, task)


def t_levels(schedule: Schedule, kind: str) -> np.ndarray:
    """The nominal two-sided level of each look's t interval: 2 (1 - Phi(c_k)) of the
    O'Brien-Fleming-type boundaries over the looks from ``MIN_DECIDING_SEEDS`` (earlier looks: 0);
    ``NO_GAIN``: the boundaries of twice the level."""
    alpha = schedule.alpha if kind == GREATER else 2 * schedule.alpha
    may = np.asarray(schedule.looks) >= MIN_DECIDING_SEEDS
    may[-1] = True
    c = np.full(len(schedule.looks), BOUNDARY_CAP)
    c[may] = boundaries((np.asarray(schedule.looks)[may] / schedule.max_seeds).tolist(), alpha)
    return 2.0 * scipy.stats.norm.sf(c)


def decide_interval(low: np.ndarray, high: np.ndarray, kind: str, margin: float) -> np.ndarray:
    """The t designs' decision from an interval [low, high]: ``GREATER``: holds above zero,
    contradicted below, equivalent inside (-margin, margin); ``NO_GAIN``: holds below +margin,
    contradicted above it; else continue (NaN bounds continue)."""
    out = np.full(np.broadcast(low, high).shape, CONTINUE, dtype=object)
    if kind == GREATER:
        out[low > 0] = HOLDS
        out[high < 0] = CONTRADICTED
        out[(low > -margin) & (high < margin) & (out == CONTINUE)] = EQUIVALENT
    else:
        out[high < margin] = HOLDS
        out[low > margin] = CONTRADICTED
    return out


def t_sequential(
    differences: np.ndarray,
    task_variance: np.ndarray,
    schedule: Schedule,
    kind: str,
    looks: Sequence[int] | None = None,
) -> np.ndarray:
    """The t repeated intervals at ``looks`` (indices into the schedule; all by default), each
    replicate stopping at its first decision."""
    levels = t_levels(schedule, kind)
    chosen = range(len(schedule.looks)) if looks is None else looks
    decision = np.full(differences.shape[0], CONTINUE, dtype=object)
    for k in chosen:
        n = schedule.looks[k]
        if levels[k] == 0:
            continue
        part = differences[:, :n]
        estimate = part.mean(axis=1)
        half = half_widths(part.var(axis=1, ddof=1), task_variance[:, :n].mean(axis=1), n, TASKS, levels[k])
        made = decide_interval(estimate - half, estimate + half, kind, schedule.margin)
        open_ = decision == CONTINUE
        decision[open_] = made[open_]
    return decision


TASKS = 128


def t_fixed(differences: np.ndarray, task_variance: np.ndarray, schedule: Schedule, kind: str) -> np.ndarray:
    n = schedule.max_seeds
    level = schedule.alpha if kind == GREATER else 2 * schedule.alpha
    estimate = differences[:, :n].mean(axis=1)
    half = half_widths(differences[:, :n].var(axis=1, ddof=1), task_variance[:, :n].mean(axis=1), n, TASKS, level)
    return decide_interval(estimate - half, estimate + half, kind, schedule.margin)


def betting_candidate(truncation: float, budget: bool) -> Candidate:
    def run(differences: np.ndarray, task_variance: np.ndarray, schedule: Schedule, kind: str) -> np.ndarray:
        horizon = schedule.max_seeds if budget else None
        verdicts = sequential.shown(differences, kind, schedule.alpha, schedule.margin, horizon, truncation)
        verdicts = verdicts[:, np.asarray(schedule.looks) - 1]
        decided = verdicts != CONTINUE
        look = np.where(decided.any(axis=1), decided.argmax(axis=1), len(schedule.looks) - 1)
        return verdicts[np.arange(len(look)), look]

    return run


Candidate = Callable[[np.ndarray, np.ndarray, Schedule, str], np.ndarray]
"""(differences, task variance of each seed's difference, schedule, kind) -> decision per replicate."""

CANDIDATES: Mapping[str, Candidate] = {
    "betting, c = 1, every seed count": betting_candidate(1.0, False),
    "betting, c = 1, stakes for the budget": betting_candidate(1.0, True),
    "betting, c = 3/4, every seed count": betting_candidate(0.75, False),
    "betting, c = 1/2, every seed count": betting_candidate(0.5, False),
    "t repeated intervals (previous design, uncalibrated)": t_sequential,
    "t fixed-n at the budget": t_fixed,
}
