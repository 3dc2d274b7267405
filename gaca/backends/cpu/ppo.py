"""One PPO update on a batch of step rows: the advantage of each step on its tokens, clipped surrogate, KL."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gaca.backends.config import TrainerConfig
from gaca.backends.cpu.losses import clipped_policy_loss, low_var_kl, masked_mean
from gaca.backends.cpu.rollout import StepRows, pad_rows
from gaca.estimators.tokens import broadcast_to_tokens
from gaca.policy.logprobs import sequence_logprobs
from gaca.policy.model import Policy


@dataclass
class UpdateStats:
    policy_loss: float
    kl: float
    clip_frac: float
    entropy: float
    grad_norm: float
    tokens: int


def reference_logprobs(reference: Policy, rows: StepRows, indices: list[int], temperature: float) -> torch.Tensor:
    """[B, R] log-probs of the rows' responses under the frozen reference policy."""
    with torch.no_grad():
        logprobs, _, _ = sequence_logprobs(
            reference.model,
            [rows.prompt_ids[i] for i in indices],
            [rows.response_ids[i] for i in indices],
            temperature,
            None if rows.allowed is None else [rows.allowed[i] for i in indices],
        )
    return logprobs


def ppo_update(
    policy: Policy,
    reference: Policy | None,
    optimizer: torch.optim.Optimizer,
    rows: StepRows,
    advantages: torch.Tensor,
    config: TrainerConfig,
    generator: torch.Generator,
) -> UpdateStats:
    """``config.ppo_epochs`` passes of shuffled mini-batches over ``rows``.

    Args:
        advantages: [N] A_t per row, broadcast here over each row's response tokens.
        reference: the frozen initial policy for the KL term; None when ``kl_coef`` is 0.
    """
    device = policy.device
    n = len(rows)
    temperature = config.rollout_temperature
    totals = {"policy_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "entropy": 0.0, "grad_norm": 0.0}
    updates, tokens = 0, 0
    for _ in range(config.ppo_epochs):
        order = torch.randperm(n, generator=generator).tolist()
        for start in range(0, n, config.minibatch_size):
            indices = order[start : start + config.minibatch_size]
            allowed = None if rows.allowed is None else [rows.allowed[i] for i in indices]
            logprobs, entropy, mask = sequence_logprobs(
                policy.model,
                [rows.prompt_ids[i] for i in indices],
                [rows.response_ids[i] for i in indices],
                temperature,
                allowed,
            )
            width = mask.shape[1]
            old = pad_rows([rows.logprobs[i] for i in indices], width).to(device)
            token_advantages = broadcast_to_tokens(advantages[indices].to(device), mask)
            surrogate = clipped_policy_loss(
                old, logprobs, token_advantages, mask, config.clip_ratio, config.clip_ratio_c
            )
            loss = surrogate.loss
            kl = torch.zeros(())
            if reference is not None and config.kl_coef > 0:
                kl = masked_mean(low_var_kl(logprobs, reference_logprobs(reference, rows, indices, temperature)), mask)
                loss = loss + config.kl_coef * kl
            mean_entropy = masked_mean(entropy, mask)
            if config.entropy_coef > 0:
                loss = loss - config.entropy_coef * mean_entropy
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), config.max_grad_norm)
            optimizer.step()
            totals["policy_loss"] += surrogate.loss.item()
            totals["kl"] += kl.item()
            totals["clip_frac"] += surrogate.clip_frac.item()
            totals["entropy"] += mean_entropy.item()
            totals["grad_norm"] += float(grad_norm)
            updates += 1
            tokens += int(mask.sum().item()) + sum(len(rows.prompt_ids[i]) for i in indices)
    return UpdateStats(**{k: v / max(updates, 1) for k, v in totals.items()}, tokens=tokens)
