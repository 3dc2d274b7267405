"""Where a batch's learning signal is: the testbed properties of one iteration (docs/testbed.md).

Logged every iteration as ``diag/*`` (their meaning is in ``gaca.contract.METRICS``) beside the
estimator's own diagnostics, and printed by
``gaca bench testbed`` for the behaviour-cloned start and the end of training.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

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
    response_lengths = np.array([len(ids) for ids in rollouts.rows.response_ids], dtype=np.float64)
    return {
        **advantage_signal(advantage, response_lengths),
        **outcome_signal([e.group for e in episodes], [e.won for e in episodes], [e.length for e in episodes], horizon),
    }


def advantage_signal(advantage: AdvantageOutput, response_lengths: np.ndarray) -> dict[str, float]:
    """The signal metrics read from the estimator's output; ``response_lengths`` [N] tokens of each step row."""
    metrics = {contract.DIAG_ZERO_ADV_FRAC: float((advantage.advantages.abs() < ZERO).double().mean())}
    if advantage.step_level is not None:
        step, episode = advantage.step_level.double().cpu().numpy(), advantage.episode.double().cpu().numpy()
        carries = (np.abs(step) > ZERO) | (np.abs(episode) > ZERO)
        metrics[contract.DIAG_STEP_EPISODE_CORR] = _correlation(step[carries], episode[carries])
    if advantage.criticality is not None:
        metrics[contract.DIAG_C_LENGTH_CORR] = _correlation(
            advantage.criticality.double().cpu().numpy(), response_lengths
        )
    return metrics


def outcome_signal(
    groups: Sequence[Hashable], won: Sequence[bool], lengths: Sequence[int], horizon: int
) -> dict[str, float]:
    """The signal metrics read from the episodes: each episode's prompt group, success and length in steps."""
    won_by_group: dict[Hashable, set[bool]] = {}
    for group, outcome in zip(groups, won):
        won_by_group.setdefault(group, set()).add(bool(outcome))
    return {
        contract.DIAG_MIXED_GROUP_FRAC: float(np.mean([len(outcomes) > 1 for outcomes in won_by_group.values()])),
        contract.DIAG_LENGTH_FRAC: float(np.mean(lengths) / horizon),
    }
