"""Simulated experiments like the measured ones, for the sequential design's calibration
(``analysis.sequential.calibrate``), its benchmark and its tests (``simulate``): two cells compared
seed by seed over ``TASKS`` evaluation
tasks. Each cell's success on a seed is its level plus the true difference (for cell a); a seed's
mean over its tasks adds task noise of variance v / TASKS, v the variance of a per-task paired
difference (binary episodes: the sum of the two cells' p (1 - p)), and the task-level variance is
estimated with TASKS - 1 degrees of freedom (a scaled chi-square). Regimes:

- ``collapse``: free decoding on the default testbed. Per seed a run learns (success 0.8) or
  collapses (0.1) with probability 1/2: pooled seed std 35 points, the measured 30-37. ``shared``
  is the chance that both cells of a seed share that outcome (the seed decides), else each cell
  draws its own; 0 is the worst case for a paired test.
- ``stable``: decoding among well-formed commands: normal seed effects of 5.5 points per cell
  (the measured 5-6), half shared by the two cells of a seed, around 50% success.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TASKS = 128
COLLAPSE_LEVELS = (0.1, 0.8)
STABLE_LEVEL = 0.5
STABLE_STD = 0.055


@dataclass(frozen=True)
class Regime:
    name: str
    collapse: bool
    shared: float
    """collapse: the chance both cells of a seed share its outcome; stable: the shared share of the variance."""


REGIMES = (
    Regime("collapse, independent per cell", True, 0.0),
    Regime("collapse, half shared", True, 0.5),
    Regime("stable 5.5 pts", False, 0.5),
)


def simulate(
    rng: np.random.Generator, regime: Regime, difference: float, replicates: int, seeds: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed paired differences a - b and the estimated task-level variance of each (the
    within-seed variance of the per-task differences over ``TASKS``), each ``(replicates, seeds)``."""
    shape = (replicates, seeds)
    if regime.collapse:
        low, high = COLLAPSE_LEVELS
        seed_state = rng.random(shape) < 0.5
        states = []
        for _ in range(2):
            own = rng.random(shape) < 0.5
            states.append(np.where(rng.random(shape) < regime.shared, seed_state, own))
        level_a = np.where(states[0], high, low) + difference
        level_b = np.where(states[1], high, low)
    else:
        common = rng.standard_normal(shape) * STABLE_STD * np.sqrt(regime.shared)
        own = rng.standard_normal((2, *shape)) * STABLE_STD * np.sqrt(1.0 - regime.shared)
        level_a = STABLE_LEVEL + common + own[0] + difference
        level_b = STABLE_LEVEL + common + own[1]
    level_a, level_b = np.clip(level_a, 0.0, 1.0), np.clip(level_b, 0.0, 1.0)
    task_variance = level_a * (1 - level_a) + level_b * (1 - level_b)
    noise = rng.standard_normal(shape) * np.sqrt(task_variance / TASKS)
    estimated = task_variance * rng.chisquare(TASKS - 1, shape) / (TASKS - 1)
    return level_a - level_b + noise, estimated / TASKS
