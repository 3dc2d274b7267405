"""Where a batch's learning signal is: the testbed properties of one iteration (docs/testbed.md).

Logged every iteration as ``diag/*`` beside the estimator's own diagnostics, and printed by
``gaca bench testbed`` for the behaviour-cloned start and the end of training.
"""

from __future__ import annotations

import numpy as np

from gaca.estimators import AdvantageOutput
from gaca.trainer.rollout import Rollouts

ZERO_ADVANTAGE_FRAC = "diag/zero_adv_frac"
"""Fraction of step rows whose advantage A_t is 0 (|A_t| < 1e-9): rows that teach nothing."""
MIXED_GROUP_FRAC = "diag/mixed_group_frac"
"""Fraction of prompt groups whose G rollouts do not all succeed or all fail."""
STEP_EPISODE_CORR = "diag/step_episode_corr"
"""Pearson correlation of A^S and A^E over the rows where either is non-zero (GiGPO and GACA; 0 when
either has no spread)."""
LENGTH_FRAC = "diag/length_frac"
"""Mean episode length over the horizon (1: every episode was cut by the horizon)."""
C_LENGTH_CORR = "diag/c_length_corr"
"""Pearson correlation of c_t and the response length in tokens over the batch (GACA; 0 when either
has no spread)."""
SIGNAL_METRICS = (ZERO_ADVANTAGE_FRAC, MIXED_GROUP_FRAC, STEP_EPISODE_CORR, LENGTH_FRAC, C_LENGTH_CORR)

ZERO = 1e-9


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; 0 when either side has no spread (or there are fewer than two rows), so
    that the metric has a point every iteration (no linear relation can be measured there)."""
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def batch_signal(rollouts: Rollouts, advantage: AdvantageOutput, horizon: int) -> dict[str, float]:
    """The ``SIGNAL_METRICS`` of one batch (the correlations only for estimators that have A^S or c)."""
    episodes = rollouts.episodes
    won_by_group: dict[int, set[bool]] = {}
    for episode in episodes:
        won_by_group.setdefault(episode.group, set()).add(episode.won)
    metrics = {
        ZERO_ADVANTAGE_FRAC: float((advantage.advantages.abs() < ZERO).double().mean()),
        MIXED_GROUP_FRAC: float(np.mean([len(outcomes) > 1 for outcomes in won_by_group.values()])),
        LENGTH_FRAC: float(np.mean([e.length for e in episodes]) / horizon),
    }
    if advantage.step_level is not None:
        step, episode = advantage.step_level.double().cpu().numpy(), advantage.episode.double().cpu().numpy()
        carries = (np.abs(step) > ZERO) | (np.abs(episode) > ZERO)
        metrics[STEP_EPISODE_CORR] = _correlation(step[carries], episode[carries])
    if advantage.criticality is not None:
        length = np.array([len(ids) for ids in rollouts.rows.response_ids], dtype=np.float64)
        metrics[C_LENGTH_CORR] = _correlation(advantage.criticality.double().cpu().numpy(), length)
    return metrics
