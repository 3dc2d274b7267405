"""Read the estimator's step rows from a verl DataProto in verl-agent's layout.

verl-agent's multi-turn rollout (``agent_system.multi_turn_rollout.TrajectoryCollector``) emits one
batch row per (environment, step) with these ``non_tensor_batch`` fields, all read here:

| field | what it is | estimator input |
| --- | --- | --- |
| ``uid`` | task group id, shared by the G rollouts of one task | ``group`` |
| ``traj_uid`` | trajectory id | ``traj`` |
| ``rewards`` | the environment's reward of this step (object array of numbers) | ``reward`` |
| ``is_action_valid`` | False for a malformed action (optional) | ``invalid``; ``reward -= penalty`` |
| ``anchor_obs`` | the raw current observation, no history (gigpo, gaca) | ``anchor`` |
| ``step`` | time index in the trajectory (optional, see below) | ``step`` |

and the ``batch`` tensors ``old_log_probs`` [B, L] with ``response_mask`` [B, L] (gaca), whose
masked mean negative log-probability is H_t (Eq. 4).

The step index: verl-agent has no such field; its rollout appends a trajectory's rows in time
order, so the k-th row of a trajectory is its step k. Trainers then reorder rows
(``trainer.balance_batch``) and append padding copies (verl-agent's ``adjust_batch``), so stamp
the index while the rows are still in rollout order: ``add_step_index(batch)`` right after the
rollout. With ``step`` stamped, padding copies (same ``traj_uid`` and ``step``) are recognised and
get their original's advantage; under ``conventions: verl_agent`` they count in the group
statistics as verl-agent's own estimators count them (``copies`` of ``compute_advantages``), under
``spec`` each real row counts once. ``adjust_batch`` pads up to the least common multiple of the
log-prob and actor micro-batches times the GPUs, so up to ``32 x GPUs - 1`` copies with the
ALFWorld recipe. Without it the index is derived from the current row order, which
is only right before any reordering or padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from gaca.backends.verl.agent.options import RewardOptions
from gaca.estimators.config import AdvantageConfig
from gaca.estimators.registry import ESTIMATORS, needs_nll
from gaca.estimators.steps import StepRows
from gaca.estimators.tokens import mean_token_nll

if TYPE_CHECKING:
    from verl import DataProto

ROLLOUT = "verl-agent's multi-turn environment manager (agent_system.multi_turn_rollout.TrajectoryCollector)"
PROVIDERS = {
    "uid": ROLLOUT,
    "traj_uid": ROLLOUT,
    "rewards": ROLLOUT,
    "anchor_obs": f"{ROLLOUT}, from the environment's 'anchor' observation",
    "old_log_probs": "the actor's compute_log_prob (recomputed old log-probs)",
    "response_mask": "verl's compute_response_mask (the trainer adds it before the advantage step)",
}
V1_HINT = (
    "verl's V1 trainer (trainer.use_v1=true, the default) hands the advantage step only uid, masks "
    "and log-probs: run the legacy trainer (trainer.use_v1=false) with verl-agent's multi-turn rollout"
)


@dataclass(frozen=True)
class BatchSteps:
    """The estimator's input for the U distinct steps among a verl batch's B rows, and the way back.

    ``steps`` holds one entry per distinct step (its ``copies`` [U]: how many more rows of the batch
    repeat it); ``rows`` [U] is one batch row of each step; ``inverse`` [B] maps each row to its step
    (padding copies share their original's).
    """

    steps: StepRows
    rows: np.ndarray  # [U] int64
    inverse: np.ndarray  # [B] int64

    def to_rows(self, per_step: torch.Tensor) -> torch.Tensor:
        """[B] a per-step value [U] on every batch row of that step."""
        if len(self.rows) == len(self.inverse):
            return per_step
        return per_step[torch.from_numpy(self.inverse).to(per_step.device)]


GLOBAL_STEP = "global_steps"
"""``meta_info`` key of the training step (verl's own name): the random detector's seed derives from it."""


def add_step_index(data: DataProto, global_step: int | None = None) -> DataProto:
    """Stamp ``non_tensor_batch['step']``: the position of each row within its trajectory.

    Call it on the rollout's output, while each trajectory's rows are still in time order (in
    verl-agent's trainer: right after ``multi_turn_loop``, before ``adjust_batch`` and
    ``_balance_batch``). ``global_step`` (the trainer's ``self.global_steps``) goes to
    ``meta_info['global_steps']``, where verl's own trainer puts it. Returns ``data``, changed in place.
    """
    traj = _required(data, "traj_uid")
    data.non_tensor_batch["step"] = rollout_order_steps(_codes(traj))
    if global_step is not None:
        data.meta_info[GLOBAL_STEP] = int(global_step)
    return data


def rollout_order_steps(traj_codes: np.ndarray) -> np.ndarray:
    """[B] int64: the k-th row (in batch order) of each trajectory code gets k."""
    order = np.argsort(traj_codes, kind="stable")
    sorted_codes = traj_codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    lengths = np.diff(np.r_[starts, len(order)])
    steps = np.empty(len(order), dtype=np.int64)
    steps[order] = np.arange(len(order)) - np.repeat(starts, lengths)
    return steps


def read_step_rows(
    data: DataProto, config: AdvantageConfig, reward_options: RewardOptions, response_mask: torch.Tensor
) -> BatchSteps:
    """The step rows of ``data`` for ``config.method``; see the module docstring for the fields.

    Raises:
        ValueError: naming a missing field and the rollout that provides it; a non-numeric or
            wrongly sized field; two rows with one (traj_uid, step) that are not copies.
    """
    group = _required(data, "uid")
    traj = _required(data, "traj_uid")
    reward = _numbers(data, "rewards")
    valid = data.non_tensor_batch.get("is_action_valid")
    invalid = np.zeros(len(reward), dtype=bool) if valid is None else ~np.asarray(valid, dtype=bool)
    if reward_options.invalid_action_penalty > 0:
        reward = reward - reward_options.invalid_action_penalty * invalid
    anchor = _required(data, "anchor_obs") if ESTIMATORS.spec(config.method).needs_anchors else None
    nll = mean_token_nll(_tensor(data, "old_log_probs"), response_mask) if needs_nll(config.to_dict()) else None

    traj_codes = _codes(traj)
    if "step" in data.non_tensor_batch:
        step = _integers(data, "step")
        rows, inverse = _distinct_steps(traj_codes, step)
        if len(rows) == len(step):
            rows = inverse = np.arange(len(step))
        else:
            _check_copies(
                rows,
                inverse,
                traj,
                step,
                {"uid": group, "rewards": reward, "is_action_valid": invalid, "anchor_obs": anchor},
            )
    else:
        step = rollout_order_steps(traj_codes)
        rows = inverse = np.arange(len(step))

    def take(values: Any) -> Any:
        if values is None or len(rows) == len(step):
            return values
        return values[torch.from_numpy(rows).to(values.device)] if isinstance(values, torch.Tensor) else values[rows]

    copies = np.bincount(inverse, minlength=len(rows)) - 1
    steps = StepRows(take(group), take(traj), take(step), take(reward), take(invalid), take(anchor), take(nll), copies)
    return BatchSteps(steps, rows, inverse)


def _distinct_steps(traj_codes: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row of each distinct (trajectory, step) and the map of every row to it."""
    key = traj_codes * (int(step.max()) + 1) + step
    _, rows, inverse = np.unique(key, return_index=True, return_inverse=True)
    return rows, inverse.reshape(-1)


def _check_copies(
    rows: np.ndarray, inverse: np.ndarray, traj: np.ndarray, step: np.ndarray, fields: dict[str, Any]
) -> None:
    """Rows sharing (traj_uid, step) must be padding copies: equal in every estimator input."""
    copies = np.flatnonzero(rows[inverse] != np.arange(len(inverse)))
    for name, values in fields.items():
        if values is None:
            continue
        for row in copies:  # padding copies only: a handful of rows
            original = rows[inverse[row]]
            if values[row] != values[original]:
                raise ValueError(
                    f"rows {original} and {row} share traj_uid {traj[row]!r} and step {step[row]} but differ "
                    f"in {name}; 'step' must be stamped in rollout order (add_step_index right after the "
                    f"rollout) and repeated rows must be copies"
                )


def _missing(name: str, data: DataProto, where: str) -> ValueError:
    present = sorted(data.non_tensor_batch) if where == "non_tensor_batch" else sorted(data.batch.keys())
    return ValueError(
        f"the batch has no {where}[{name!r}], which gaca's estimators need; {PROVIDERS[name]} provides "
        f"it. {where} has: {present}. ({V1_HINT}.)"
    )


def _required(data: DataProto, name: str) -> np.ndarray:
    values = data.non_tensor_batch.get(name)
    if values is None:
        raise _missing(name, data, "non_tensor_batch")
    if len(values) != len(data):
        raise ValueError(f"non_tensor_batch[{name!r}] has {len(values)} rows, the batch {len(data)}")
    return values


def _numbers(data: DataProto, name: str) -> np.ndarray:
    values = _required(data, name)
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"non_tensor_batch[{name!r}] must hold one number per row: {error}") from None


def _integers(data: DataProto, name: str) -> np.ndarray:
    values = _numbers(data, name)
    if (values != np.round(values)).any() or (values < 0).any():
        raise ValueError(f"non_tensor_batch[{name!r}] must hold integer time indices >= 0")
    return values.astype(np.int64)


def _tensor(data: DataProto, name: str) -> torch.Tensor:
    if data.batch is None or name not in data.batch.keys():
        raise _missing(name, data, "batch")
    return data.batch[name]


def _codes(ids: np.ndarray) -> np.ndarray:
    """[B] int64 dense codes of hashable ids, in order of first appearance."""
    index: dict[Any, int] = {}
    return np.fromiter((index.setdefault(value, len(index)) for value in ids.tolist()), np.int64, len(ids))
