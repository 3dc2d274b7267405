"""Where a batch's learning signal is: the testbed properties of one iteration (docs/testbed.md).

Logged every iteration as ``diag/*`` (their meaning is in ``gaca.contract.METRICS``) beside the
estimator's own diagnostics, and printed by
``gaca bench testbed`` for the behaviour-cloned start and the end of training.
"""

from __future__ import annotations

import numpy as np

from gaca import contract
from gaca.backends.cpu.rollout import Rollouts
from gaca.estimators import AdvantageOutput

ZERO = 1e-9


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; 0 when either side has no spread (or there are fewer than two rows), so
    that the metric has a point every iteration (no linear relation can be measured there)."""
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def batch_signal(rollouts: Rollouts, advantage: AdvantageOutput, horizon: int) -> dict[str, float]:
    """The ``contract.SIGNAL_METRICS`` of one batch (the correlations only for estimators that have A^S or c)."""
    episodes = rollouts.episodes
    won_by_group: dict[int, set[bool]] = {}
    for episode in episodes:
        won_by_group.setdefault(episode.group, set()).add(episode.won)
    metrics = {
        contract.DIAG_ZERO_ADV_FRAC: float((advantage.advantages.abs() < ZERO).double().mean()),
        contract.DIAG_MIXED_GROUP_FRAC: float(np.mean([len(outcomes) > 1 for outcomes in won_by_group.values()])),
        contract.DIAG_LENGTH_FRAC: float(np.mean([e.length for e in episodes]) / horizon),
    }
    if advantage.step_level is not None:
        step, episode = advantage.step_level.double().cpu().numpy(), advantage.episode.double().cpu().numpy()
        carries = (np.abs(step) > ZERO) | (np.abs(episode) > ZERO)
        metrics[contract.DIAG_STEP_EPISODE_CORR] = _correlation(step[carries], episode[carries])
    if advantage.criticality is not None:
        length = np.array([len(ids) for ids in rollouts.rows.response_ids], dtype=np.float64)
        metrics[contract.DIAG_C_LENGTH_CORR] = _correlation(advantage.criticality.double().cpu().numpy(), length)
    return metrics
