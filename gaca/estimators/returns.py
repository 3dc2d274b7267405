"""Returns of the spec: the undiscounted episode return and the discounted step return."""

from __future__ import annotations

import torch

from gaca.estimators.batch import StepBatch
from gaca.estimators.segments import segment_sum


def episode_returns(batch: StepBatch, rewards: torch.Tensor | None = None) -> torch.Tensor:
    """[T] ``R_tau = sum_t r_t`` per trajectory (undiscounted; negative with penalties) of ``rewards``
    [N] (default: ``batch.reward``)."""
    return segment_sum(batch.reward if rewards is None else rewards, batch.traj, batch.num_trajs)


def environment_rewards(batch: StepBatch) -> torch.Tensor:
    """[N] the rewards without the invalid-action penalty: ``r_t + p * invalid_t``."""
    return batch.reward if batch.penalty is None else batch.reward + batch.penalty


def padded(batch: StepBatch, values: torch.Tensor) -> torch.Tensor:
    """[T, horizon] layout of per-row ``values`` [N]; slots past a trajectory's end hold 0."""
    out = values.new_zeros(batch.num_trajs * batch.horizon)
    out[batch.slot] = values
    return out.view(batch.num_trajs, batch.horizon)


def discounted_returns(batch: StepBatch, gamma: float, rewards: torch.Tensor | None = None) -> torch.Tensor:
    """[N] ``g_t = sum_{t' >= t} gamma^(t' - t) r_t'`` per row of ``rewards`` [N] (default: ``batch.reward``).

    One matmul of the padded rewards with the upper-triangular discount matrix
    ``D[t, t'] = gamma^(t' - t)`` (t' >= t): no loop over time, and every power is <= 1, so it
    stays exact where a ``gamma^-t`` rescaled cumulative sum would overflow.
    """
    time = torch.arange(batch.horizon, device=batch.device, dtype=torch.float64)
    lag = time[None, :] - time[:, None]  # [H, H]: t' - t
    discount = torch.where(lag >= 0, gamma ** lag.clamp(min=0), torch.zeros_like(lag))
    returns = padded(batch, batch.reward if rewards is None else rewards) @ discount.T  # [T, H]
    return returns.reshape(-1)[batch.slot]


def return_changes(batch: StepBatch, step_return: torch.Tensor) -> torch.Tensor:
    """[N] ``D_t = |g_t - g_{t-1}|``, with D = 0 at a trajectory's first step (Eq. 6)."""
    previous = padded(batch, step_return).reshape(-1)[(batch.slot - 1).clamp(min=0)]
    return torch.where(batch.step > 0, (step_return - previous).abs(), torch.zeros_like(step_return))
