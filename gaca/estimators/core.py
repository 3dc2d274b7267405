"""compute_advantages, and the vectorized levels that the estimators (``gaca.estimators.methods``) build on.

One row per agent step (docs/estimator.md, "Input"). Everything runs as vectorized segment
operations on integer codes; nothing here loops over steps, trajectories or groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import torch

from gaca.estimators.batch import ArrayLike, StepBatch, build_step_batch
from gaca.estimators.config import AdvantageConfig, Conventions
from gaca.estimators.registry import ESTIMATORS, NORMALIZERS, needs_nll
from gaca.estimators.returns import discounted_returns, environment_rewards, episode_returns
from gaca.estimators.segments import segment_count


@dataclass(frozen=True)
class AdvantageOutput:
    """Per-row results, in the input row order; float tensors of length N, no gradient."""

    advantages: torch.Tensor
    """A_t: what reaches the surrogate (Eq. 8 for gaca)."""
    episode: torch.Tensor
    """A^E: the group-normalised episode return, broadcast to the trajectory's steps (Eq. 2); with
    ``conventions='verl_agent'`` each row's episode score (R_env - p * invalid_t) normalised over rows."""
    step_level: torch.Tensor | None
    """A^S: the anchor-group-normalised step return (Eq. 3); None for grpo."""
    lam: torch.Tensor | None = None
    """lambda_t of the gate (Eq. 7); gaca only."""
    criticality: torch.Tensor | None = None
    """c_t (Eq. 5), mean one per trajectory; gaca only."""
    diagnostics: dict[str, float] = field(default_factory=dict)
    """criticality_std, lambda_mean, lambda_std, clamp_frac (gaca only) and nonsingleton_frac."""


def step_returns(batch: StepBatch, config: AdvantageConfig, rules: Conventions) -> torch.Tensor:
    """[N] g_t. spec: discounted r_t, penalties inside. penalty_at_step: the environment rewards
    discounted, then the row's own penalty subtracted once, ``g_env(t) - p * invalid_t``."""
    if not rules.penalty_at_step or batch.penalty is None:
        return discounted_returns(batch, config.gamma)
    return discounted_returns(batch, config.gamma, environment_rewards(batch)) - batch.penalty


def episode_advantage(batch: StepBatch, config: AdvantageConfig, rules: Conventions) -> torch.Tensor:
    """[N] A^E (Eq. 2): each trajectory's return normalised within its prompt group.

    spec: one R_tau per trajectory, statistics over the group's trajectories. episode_over_rows:
    every row's episode score (``R_env(tau) - p * invalid_t`` with penalty_at_step, else R_tau),
    statistics over the group's rows.
    """
    normalize = NORMALIZERS.get(config.norm)
    if not rules.episode_over_rows:
        per_traj = normalize(
            episode_returns(batch), batch.traj_group, batch.num_groups, config.eps, rules.one_element_raw
        )
        return per_traj[batch.traj]
    if rules.penalty_at_step and batch.penalty is not None:
        score = episode_returns(batch, environment_rewards(batch))[batch.traj] - batch.penalty
    else:
        score = episode_returns(batch)[batch.traj]
    return normalize(score, batch.group, batch.num_groups, config.eps, rules.one_element_raw, batch.weight)


def step_advantage(
    batch: StepBatch, step_return: torch.Tensor, config: AdvantageConfig, rules: Conventions
) -> tuple[torch.Tensor, torch.Tensor]:
    """[N] A^S (Eq. 3) and the [N] bool mask of rows in a non-singleton anchor group.

    A step alone in its anchor group falls back to the prompt group, or to zero
    (``rules.singleton_zero``: ``singleton_fallback='zero'`` or ``conventions='verl_agent'``).
    With ``batch.weight`` (padding copies that count) a step and its copy are a group of two.
    """
    normalize = NORMALIZERS.get(config.norm)
    anchor = cast(torch.Tensor, batch.anchor)  # only estimators that need anchors call this: the batch has them
    size = segment_count(anchor, batch.num_anchor_groups, step_return.dtype, batch.weight)[anchor]
    shared = size > 1
    within_anchor = normalize(step_return, anchor, batch.num_anchor_groups, config.eps, weight=batch.weight)
    if rules.singleton_zero:
        fallback = torch.zeros_like(step_return)
    else:
        fallback = normalize(step_return, batch.group, batch.num_groups, config.eps, weight=batch.weight)
    return torch.where(shared, within_anchor, fallback), shared


def compute_advantages(
    *,
    group: ArrayLike,
    traj: ArrayLike,
    step: ArrayLike,
    reward: ArrayLike,
    anchor: ArrayLike | None = None,
    nll: ArrayLike | None = None,
    invalid: ArrayLike | None = None,
    invalid_penalty: float | None = None,
    config: AdvantageConfig | None = None,
    copies: ArrayLike | None = None,
) -> AdvantageOutput:
    """Advantages of N agent steps under ``config.method`` (docs/estimator.md, paper Eqs. 2-8).

    Args:
        group: [N] prompt-group id of each row (any hashable; the G rollouts of one task).
        traj: [N] trajectory id, unique across the batch.
        step: [N] int time index t in its trajectory, 0..T-1 without gaps; rows in any order.
        reward: [N] r_t: the environment's reward minus the invalid-action penalty on the row whose
            action was invalid (0, or -p, plus the 0/1 success at the end), under every convention.
        anchor: [N] hashable anchor observation (the state shown before the action); needed by
            gigpo and gaca.
        nll: [N] H_t, the step's mean token negative log-likelihood under pi_old (see
            ``mean_token_nll``); needed by gaca unless ``detector='uniform'``; validated whenever given.
        invalid: [N] bool, True where the step's action was invalid (its reward includes -p).
            Needed by ``conventions='verl_agent'``, which moves the penalty out of the discounting
            and the episode sum; validated and unused under ``spec``.
        invalid_penalty: p >= 0, the penalty inside each invalid row's reward; given with ``invalid``.
        config: the estimator options; ``AdvantageConfig()`` (GACA defaults) when None.
        copies: [N] int >= 0, how many padding copies of each row the caller's batch holds besides
            it (verl-agent's ``adjust_batch``). ``conventions='verl_agent'`` counts them in the
            row-level group statistics (episode over rows, anchor groups) as verl-agent does;
            ``spec`` counts each row once. Validated whenever given; None: no copies.

    Sequences, NumPy arrays and torch tensors are accepted; tensors keep their device. Results
    are float tensors in the input row order (``torch.get_default_dtype()``), computed in
    float64 under ``no_grad``: lambda is fixed within an update.

    Raises:
        ValueError: naming the field, for any bad input (see ``build_step_batch``) or a missing
            anchor / nll / invalid that the method or convention needs. Nothing is computed before
            validation passes.
    """
    config = AdvantageConfig() if config is None else config
    if not isinstance(config, AdvantageConfig):
        raise ValueError(f"config must be an AdvantageConfig, got {type(config).__name__}")
    needs_anchor = ESTIMATORS.spec(config.method).needs_anchors
    if needs_anchor and anchor is None:
        raise ValueError(f"anchor is required for method={config.method!r} (it defines the step-level groups)")
    if needs_nll(config.to_dict()) and nll is None:
        raise ValueError(f"nll is required for method={config.method!r} with detector={config.detector!r}")
    rules = config.rules
    if rules.penalty_at_step and invalid is None:
        raise ValueError(
            f"invalid is required with conventions={config.conventions!r}: one bool per row (True where the action "
            "was invalid), with invalid_penalty=p, so that the penalty can be taken out of the discounting; "
            "pass all False (and invalid_penalty=0) when no action can be invalid"
        )
    with torch.no_grad():
        batch = build_step_batch(
            group, traj, step, reward, anchor, nll, needs_anchor, invalid, invalid_penalty, copies, rules.copies_count
        )
        output = ESTIMATORS.get(config.method)(batch, config, rules)
    return _cast(output, torch.get_default_dtype())


def mean(values: torch.Tensor) -> float:
    """The mean of ``values`` (any shape, bool too) as a float64 Python float."""
    return float(values.to(torch.float64).mean())


def std(values: torch.Tensor) -> float:
    """Unbiased std as torch.std, 0 for a single value rather than NaN."""
    return float(values.std()) if values.numel() > 1 else 0.0


def _cast(output: AdvantageOutput, dtype: torch.dtype) -> AdvantageOutput:
    def cast(value: torch.Tensor | None) -> torch.Tensor | None:
        return None if value is None else value.to(dtype)

    return AdvantageOutput(
        advantages=output.advantages.to(dtype),
        episode=output.episode.to(dtype),
        step_level=cast(output.step_level),
        lam=cast(output.lam),
        criticality=cast(output.criticality),
        diagnostics=output.diagnostics,
    )
