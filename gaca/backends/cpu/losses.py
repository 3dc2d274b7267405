"""The shared surrogate of Eq. 1: clipped PPO with dual clip, token-mean aggregation, low-variance KL.

Written to equal verl's ``vanilla`` policy loss and ``kl_penalty(..., "low_var_kl")`` term for term
(a test checks it), so CPU runs and paper-scale verl runs optimise the same objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Scalar mean of ``values`` [B, L] over ``mask`` [B, L] (token-mean aggregation)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1)


@dataclass(frozen=True)
class PolicyLoss:
    loss: torch.Tensor
    """Scalar token-mean clipped surrogate (to minimise)."""
    clip_frac: torch.Tensor
    """Fraction of tokens where the clipped branch is active."""
    clip_frac_lower: torch.Tensor
    """Fraction of tokens where the dual clip bounds a negative advantage."""
    approx_kl: torch.Tensor
    """Token-mean of log pi_old - log pi (verl's ppo_kl)."""


def clipped_policy_loss(
    old_logprob: torch.Tensor,
    logprob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    clip_ratio: float = 0.2,
    clip_ratio_c: float | None = 3.0,
) -> PolicyLoss:
    """PPO's clipped surrogate on [B, L] token tensors (Eq. 1), token-mean over ``response_mask``.

    ``max(-A rho, -A clip(rho, 1 - eps, 1 + eps))``; with ``clip_ratio_c`` the loss of a negative
    advantage is further capped at ``-A * clip_ratio_c`` (dual clip, arXiv:1912.09729).
    """
    log_ratio = (logprob - old_logprob).clamp(-20.0, 20.0)  # as verl: keeps exp finite
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_ratio, 1.0 + clip_ratio)
    surrogate = torch.maximum(unclipped, clipped)
    clip_frac = masked_mean(torch.gt(clipped, unclipped).to(logprob.dtype), response_mask)
    if clip_ratio_c is not None:
        dual = -advantages * clip_ratio_c
        clip_frac_lower = masked_mean((torch.gt(surrogate, dual) & (advantages < 0)).to(logprob.dtype), response_mask)
        surrogate = torch.where(advantages < 0, torch.minimum(dual, surrogate), surrogate)
    else:
        clip_frac_lower = torch.zeros((), dtype=logprob.dtype)
    return PolicyLoss(
        loss=masked_mean(surrogate, response_mask),
        clip_frac=clip_frac.detach(),
        clip_frac_lower=clip_frac_lower.detach(),
        approx_kl=masked_mean(-log_ratio, response_mask).detach(),
    )


def low_var_kl(logprob: torch.Tensor, ref_logprob: torch.Tensor) -> torch.Tensor:
    """[B, L] Schulman's k3 estimator of KL(pi || pi_ref): ``exp(r) - r - 1`` with ``r = log pi_ref - log pi``.

    Clamped like verl's ``low_var_kl`` (r to [-20, 20], the estimate to [-10, 10]).
    """
    log_ratio = (ref_logprob - logprob).clamp(-20.0, 20.0)
    return (log_ratio.exp() - log_ratio - 1.0).clamp(-10.0, 10.0)
