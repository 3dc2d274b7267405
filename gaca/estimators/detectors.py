"""Criticality detectors: how the per-step score c_t of Eq. 5 is formed (docs/estimator.md, "Detectors").

Each detector maps the batch to c [N], a per-trajectory-mean-one score. ``entropy`` is the method;
``uniform`` and ``random`` are the controls of Section 4.3; ``loo`` is the debiased variant of
Appendix B.4. They are registered by name, with what each reads, in ``gaca.estimators.registry``.
"""

from __future__ import annotations

from typing import cast

import torch

from gaca.estimators.batch import StepBatch
from gaca.estimators.config import AdvantageConfig
from gaca.estimators.returns import return_changes
from gaca.estimators.segments import segment_mean, segment_sum


def relative_to_trajectory(values: torch.Tensor, batch: StepBatch) -> torch.Tensor:
    """[N] ``x_t / mean_tau(x)``; 1 for every step of a trajectory whose mean is 0 (x >= 0)."""
    mean = segment_mean(values, batch.traj, batch.num_trajs)[batch.traj]
    return torch.where(mean > 0, values / torch.where(mean > 0, mean, torch.ones_like(mean)), torch.ones_like(values))


def fused_criticality(nll: torch.Tensor, step_return: torch.Tensor, batch: StepBatch, alpha_c: float) -> torch.Tensor:
    """[N] ``c_t`` from step NLLs ``H`` [N] and step returns ``g`` [N] (Eqs. 5-6).

    ``score = alpha_c * H / mean(H) + (1 - alpha_c) * D / mean(D)`` with ``D_t = |g_t - g_{t-1}|``,
    then ``c = score / mean(score)``, all means over the steps of the same trajectory.
    """
    score = alpha_c * relative_to_trajectory(nll, batch)
    if alpha_c < 1.0:
        score = score + (1.0 - alpha_c) * relative_to_trajectory(return_changes(batch, step_return), batch)
    return relative_to_trajectory(score, batch)


def entropy_detector(batch: StepBatch, step_return: torch.Tensor, config: AdvantageConfig) -> torch.Tensor:
    """The paper's detector: c from the step's mean token NLL (and the return change if alpha_c < 1)."""
    nll = cast(torch.Tensor, batch.nll)  # its spec needs NLL, so the batch has it
    return fused_criticality(nll, step_return, batch, config.alpha_c)


def uniform_detector(batch: StepBatch, step_return: torch.Tensor, config: AdvantageConfig) -> torch.Tensor:
    """c = 1 everywhere: lambda = lambda0, the fixed two-level estimator."""
    return torch.ones_like(batch.reward)


def random_detector(batch: StepBatch, step_return: torch.Tensor, config: AdvantageConfig) -> torch.Tensor:
    """The entropy c values permuted uniformly at random among the steps of each trajectory.

    Keeps each trajectory's multiset of c (hence of lambda) and only misroutes it. The random
    keys are drawn per (trajectory, step) slot from ``config.seed``, so the permutation does not
    depend on the order of the input rows.
    """
    criticality = entropy_detector(batch, step_return, config)
    generator = torch.Generator().manual_seed(config.seed)
    keys = torch.rand(batch.num_trajs * batch.horizon, generator=generator, dtype=torch.float64)
    keys = keys.to(batch.device)[batch.slot]
    slots = batch.num_trajs * batch.horizon
    occupied = torch.zeros(slots, dtype=torch.bool, device=batch.device)
    occupied[batch.slot] = True
    row_at_slot = torch.empty(slots, dtype=torch.int64, device=batch.device)
    row_at_slot[batch.slot] = torch.arange(len(batch.slot), device=batch.device)
    by_time = row_at_slot[occupied]  # rows in (trajectory, step) order, without a sort
    by_key = torch.argsort(batch.traj.to(torch.float64) + keys)  # keys in [0, 1) shuffle within a trajectory
    permuted = torch.empty_like(criticality)
    permuted[by_time] = criticality[by_key]
    return permuted


def leave_one_out_detector(batch: StepBatch, step_return: torch.Tensor, config: AdvantageConfig) -> torch.Tensor:
    """Debiased variant (App. B.4): H_t replaced by the mean H of the other steps in its anchor group.

    A step alone in its anchor group gets its trajectory's mean H. The score then no longer
    depends on the step's own sampled action.
    """
    # its spec needs NLL and only gated estimators (which need anchors) run a detector: the batch has both
    nll, anchor = cast(torch.Tensor, batch.nll), cast(torch.Tensor, batch.anchor)
    count = torch.bincount(anchor, minlength=batch.num_anchor_groups).to(nll.dtype)[anchor]
    others_sum = segment_sum(nll, anchor, batch.num_anchor_groups)[anchor] - nll
    trajectory_mean = segment_mean(nll, batch.traj, batch.num_trajs)[batch.traj]
    others_mean = torch.where(count > 1, others_sum / (count - 1).clamp(min=1), trajectory_mean)
    return fused_criticality(others_mean.clamp(min=0), step_return, batch, config.alpha_c)
