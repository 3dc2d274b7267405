"""Between the token level (what the policy sees) and the step level (what the estimator sees)."""

from __future__ import annotations

import torch


def mean_token_nll(token_logprobs: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """[B] H_t, the masked mean of ``-log pi_old`` over each step's response tokens (Eq. 4).

    Args:
        token_logprobs: [B, L] log-probabilities of the sampled tokens under the old policy.
        response_mask: [B, L] 1 for response tokens, 0 for padding.

    A row without response tokens gets 0. Detached: H_t only ever enters through the gate.
    """
    if token_logprobs.shape != response_mask.shape:
        raise ValueError(
            f"token_logprobs {tuple(token_logprobs.shape)} and response_mask "
            f"{tuple(response_mask.shape)} must have the same [B, L] shape"
        )
    mask = response_mask.to(token_logprobs.dtype)
    total = -(token_logprobs.detach() * mask).sum(dim=-1)
    return (total / mask.sum(dim=-1).clamp(min=1)).clamp(min=0)


def broadcast_to_tokens(advantages: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """[B, L] the step advantage [B] on every response token of its step, 0 outside the mask."""
    if advantages.ndim != 1 or advantages.shape[0] != response_mask.shape[0]:
        raise ValueError(
            f"advantages must be [B] with B = response_mask.shape[0] = {response_mask.shape[0]}, "
            f"got {tuple(advantages.shape)}"
        )
    return advantages[:, None] * response_mask.to(advantages.dtype)
