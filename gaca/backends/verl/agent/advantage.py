"""Token-level advantages of a verl DataProto through ``compute_advantages``; nothing re-implemented."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from gaca.backends.cpu.signal import advantage_signal
from gaca.backends.verl.agent.batch import GLOBAL_STEP, read_step_rows
from gaca.backends.verl.agent.options import plugin_options
from gaca.estimators.config import AdvantageConfig
from gaca.estimators.core import AdvantageOutput
from gaca.estimators.registry import DETECTORS, ESTIMATORS
from gaca.estimators.tokens import broadcast_to_tokens

if TYPE_CHECKING:
    from verl import DataProto

DIAGNOSTICS_KEY = "gaca_diagnostics"
"""``data.meta_info[DIAGNOSTICS_KEY]``: the estimator's batch diagnostics (Table 7), ``diag/...``."""
CRITICALITY_KEY = "gaca_criticality"
"""``data.meta_info[CRITICALITY_KEY]``: c_t of every step (Eq. 5) as a list, for gated estimators."""


def token_level_advantages(
    data: DataProto, estimator: str, algorithm: Any = None
) -> tuple[torch.Tensor, AdvantageOutput]:
    """[B, L] advantages of a batch in verl-agent's layout, and the estimator's per-step output.

    A_t (Eq. 8 for gaca, Eq. 3 for gigpo, Eq. 2 for gaca_grpo) on every token of step t's response,
    exactly 0 outside ``response_mask``.

    Args:
        data: one row per agent step; fields as in ``gaca.backends.verl.agent.batch``.
        estimator: ``gaca``, ``gigpo`` or ``gaca_grpo``.
        algorithm: verl's ``algorithm`` config; options under its ``gaca`` node.

    The random detector draws a fresh permutation every training step: its seed derives from
    ``algorithm.gaca.seed`` and ``data.meta_info['global_steps']``. Padding copies of a row (see
    ``gaca.backends.verl.agent.batch``) get its advantage and count in the group statistics under
    ``conventions: verl_agent`` only.

    Raises:
        ValueError: naming a bad option or a missing field (and the rollout that provides it).
    """
    advantages, output, _ = _estimate(data, estimator, algorithm)
    return advantages, output


def _estimate(data: DataProto, estimator: str, algorithm: Any) -> tuple[torch.Tensor, AdvantageOutput, np.ndarray]:
    """``token_level_advantages`` and [U] the response tokens of each step the estimator saw, in its order."""
    config, reward_options = plugin_options(algorithm, estimator)
    if draws_per_step(config):
        if GLOBAL_STEP not in data.meta_info:
            raise ValueError(
                "detector='random' draws a new permutation every training step, but the batch has no "
                f"meta_info[{GLOBAL_STEP!r}]: verl's trainer sets it; in verl-agent's, stamp it with "
                "add_step_index(batch, global_step=self.global_steps) right after the rollout"
            )
        config = config.reseeded(int(data.meta_info[GLOBAL_STEP]))
    if data.batch is None or "response_mask" not in data.batch.keys():
        raise ValueError(
            "the batch has no batch['response_mask'] [B, L]; verl's compute_response_mask provides it "
            "(attention_mask[:, -response_length:])"
        )
    response_mask = data.batch["response_mask"]
    batch = read_step_rows(data, config, reward_options, response_mask)
    output = batch.steps.advantages(config, reward_options.invalid_action_penalty)
    per_row = batch.to_rows(output.advantages).to(response_mask.device)
    lengths = response_mask[torch.as_tensor(batch.rows)].sum(-1).double().cpu().numpy()
    return broadcast_to_tokens(per_row, response_mask), output, lengths


def draws_per_step(config: AdvantageConfig) -> bool:
    """Whether the estimator's detector reads ``seed`` (a random one): it then draws afresh each step."""
    return ESTIMATORS.spec(config.method).gated and "seed" in DETECTORS.spec(config.detector).reads


def compute_batch_advantages(data: DataProto, estimator: str, algorithm: Any = None) -> DataProto:
    """Write ``advantages`` and ``returns`` [B, L] into ``data`` (in place) and return it.

    The adapter for trainers that dispatch estimators by name themselves (verl-agent's
    ``compute_advantage``). Returns equal advantages, as verl's critic-free estimators do. The
    diagnostics go to ``data.meta_info[DIAGNOSTICS_KEY]``, with the signal metrics the CPU backend reads
    from the estimator's output (``contract.DIAG_ZERO_ADV_FRAC``, ...; ``advantage_signal``).
    """
    advantages, output, lengths = _estimate(data, estimator, algorithm)
    data.batch["advantages"] = advantages
    data.batch["returns"] = advantages
    data.meta_info[DIAGNOSTICS_KEY] = {**diagnostics(output), **advantage_signal(output, lengths)}
    if output.criticality is not None:
        data.meta_info[CRITICALITY_KEY] = output.criticality.tolist()
    return data


def diagnostics(output: AdvantageOutput) -> dict[str, float]:
    """The estimator's diagnostics under the project's metric names (``diag/criticality_std``, ...)."""
    return {f"diag/{name}": value for name, value in output.diagnostics.items()}
