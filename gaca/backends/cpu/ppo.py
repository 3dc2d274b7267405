"""One PPO update on a batch of step rows: the advantage of each step on its tokens, clipped surrogate, KL.

Two ways to compute it (``trainer.update``), one loss. ``every_row`` scores every row of a mini-batch
and the reference's log-probs per mini-batch. ``distinct`` scores each distinct (prompt, response)
pair of a mini-batch once and gives every copy its row of the result, and scores the frozen
reference once per iteration, on the batch's distinct pairs. The clipped surrogate, the KL and the
token-mean are computed on the same [B, R] row tensors either way, so the loss is the same function of
the weights and its gradient the same sum over rows; only the order of float summation differs (the
copies' gradients meet at the gathered log-probs instead of in the weight matmuls), which moves a
run's numbers in their last bits: docs/benchmarks.md, "Computing each distinct step once".
Either way ``trainer.last_layer=scored_positions`` computes the last decoder layer of the scoring
forwards at the scored positions only (``gaca.policy.last_layer``), the same logits up to rounding,
and ``trainer.compile`` runs them through ``torch.compile``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from gaca.backends.config import TrainerConfig
from gaca.backends.cpu.losses import clipped_policy_loss, low_var_kl, masked_mean
from gaca.backends.cpu.rollout import RolloutRows, pad_rows
from gaca.estimators.tokens import broadcast_to_tokens
from gaca.policy.logprobs import sequence_logprobs
from gaca.policy.model import Policy

PHASES = ("forward", "backward", "reference", "optimizer")
"""Where an update's seconds go (``UpdateStats.seconds``): the policy's scoring forward with the loss,
its backward, the reference's forward, gradient clipping with the optimizer step."""


@dataclass
class UpdateStats:
    policy_loss: float
    kl: float
    clip_frac: float
    entropy: float
    grad_norm: float
    tokens: int
    """Prompt and response tokens of the rows trained on (copies counted: the same for either update)."""
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    """Seconds per phase of ``PHASES``."""


@contextmanager
def timed(seconds: dict[str, float], phase: str) -> Iterator[None]:
    began = time.perf_counter()
    try:
        yield
    finally:
        seconds[phase] += time.perf_counter() - began


def minibatches(n: int, config: TrainerConfig, generator: torch.Generator) -> list[list[int]]:
    """The row indices of each gradient step: ``config.ppo_epochs`` shuffled passes over ``n`` rows in
    mini-batches of ``config.minibatch_size`` (the last of a pass may be smaller)."""
    batches = []
    for _ in range(config.ppo_epochs):
        order = torch.randperm(n, generator=generator).tolist()
        batches += [order[start : start + config.minibatch_size] for start in range(0, n, config.minibatch_size)]
    return batches


def distinct_pairs(rows: RolloutRows) -> list[int]:
    """[N] the id of each row's (prompt ids, response ids) pair, numbered in order of first appearance;
    rows with one id score the same (constrained decoding's allowed ids are part of the pair)."""
    ids: dict[tuple, int] = {}
    allowed = rows.allowed
    return [
        ids.setdefault(
            (
                tuple(rows.prompt_ids[i]),
                tuple(rows.response_ids[i]),
                None if allowed is None else tuple(map(tuple, allowed[i])),
            ),
            len(ids),
        )
        for i in range(len(rows))
    ]


def first_of_each(pairs: Sequence[int]) -> tuple[list[int], torch.Tensor]:
    """Positions in ``pairs`` of the first copy of each pair, and for each position the index of its
    pair among those firsts: ``pairs[firsts[inverse[j]]] == pairs[j]``."""
    slot: dict[int, int] = {}
    firsts: list[int] = []
    inverse = []
    for position, pair in enumerate(pairs):
        if pair not in slot:
            slot[pair] = len(firsts)
            firsts.append(position)
        inverse.append(slot[pair])
    return firsts, torch.tensor(inverse, dtype=torch.long)


def score(
    model: torch.nn.Module, rows: RolloutRows, indices: Sequence[int], config: TrainerConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``sequence_logprobs`` of the rows ``indices`` at the rollout temperature, its forward as
    ``config.last_layer`` and ``config.compile`` say: log-probs, entropies, response mask, each [B, R]."""
    return sequence_logprobs(
        model,  # type: ignore[arg-type]  # the causal LM of a Policy
        [rows.prompt_ids[i] for i in indices],
        [rows.response_ids[i] for i in indices],
        config.rollout_temperature,
        None if rows.allowed is None else [rows.allowed[i] for i in indices],
        config.last_layer,
        config.compile,
    )


def reference_logprobs(
    reference: Policy, rows: RolloutRows, indices: Sequence[int], config: TrainerConfig
) -> torch.Tensor:
    """[B, R] log-probs of the rows' responses under the frozen reference policy."""
    with torch.no_grad():
        logprobs, _, _ = score(reference.model, rows, indices, config)
    return logprobs


def distinct_reference_logprobs(
    reference: Policy, rows: RolloutRows, firsts: Sequence[int], config: TrainerConfig
) -> torch.Tensor:
    """[P, R] the reference's log-probs of each distinct pair (row ``firsts[p]``), R the batch's longest
    response; scored in chunks of ``config.minibatch_size`` pairs of similar length, so that little of a
    chunk is padding."""
    width = max(len(rows.response_ids[i]) for i in firsts)
    by_length = sorted(
        range(len(firsts)), key=lambda p: (len(rows.prompt_ids[firsts[p]]), len(rows.response_ids[firsts[p]]))
    )
    result = torch.zeros(len(firsts), width)
    for start in range(0, len(by_length), config.minibatch_size):
        part = by_length[start : start + config.minibatch_size]
        logprobs = reference_logprobs(reference, rows, [firsts[p] for p in part], config)
        result[part, : logprobs.shape[1]] = logprobs.to(result.device)
    return result


def ppo_update(
    policy: Policy,
    reference: Policy | None,
    optimizer: torch.optim.Optimizer,
    rows: RolloutRows,
    advantages: torch.Tensor,
    config: TrainerConfig,
    generator: torch.Generator,
) -> UpdateStats:
    """``config.ppo_epochs`` passes of shuffled mini-batches over ``rows``, computed as ``config.update`` says.

    Args:
        advantages: [N] A_t per row, broadcast here over each row's response tokens.
        reference: the frozen initial policy for the KL term; None when ``kl_coef`` is 0.
    """
    device = policy.device
    distinct = config.update == "distinct"
    with_kl = reference is not None and config.kl_coef > 0
    totals = {"policy_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "entropy": 0.0, "grad_norm": 0.0}
    seconds = dict.fromkeys(PHASES, 0.0)
    pairs = distinct_pairs(rows) if distinct else []
    reference_of_pair = torch.zeros(0, 0)
    if distinct and with_kl:
        assert reference is not None  # with_kl
        with timed(seconds, "reference"):
            firsts, _ = first_of_each(pairs)
            reference_of_pair = distinct_reference_logprobs(reference, rows, firsts, config).to(device)
    updates, tokens = 0, 0
    for indices in minibatches(len(rows), config, generator):
        with timed(seconds, "forward"):
            if distinct:
                firsts, inverse = first_of_each([pairs[i] for i in indices])
                scored = score(policy.model, rows, [indices[j] for j in firsts], config)
                logprobs, entropy, mask = (values[inverse.to(device)] for values in scored)
            else:
                logprobs, entropy, mask = score(policy.model, rows, indices, config)
            width = mask.shape[1]
            old = pad_rows([rows.logprobs[i] for i in indices], width).to(device)
            token_advantages = broadcast_to_tokens(advantages[indices].to(device), mask)
            surrogate = clipped_policy_loss(
                old, logprobs, token_advantages, mask, config.clip_ratio, config.clip_ratio_c
            )
            loss = surrogate.loss
        kl = torch.zeros(())
        if with_kl:
            assert reference is not None  # with_kl
            with timed(seconds, "reference"):
                if distinct:
                    reference_rows = reference_of_pair[[pairs[i] for i in indices], :width]
                else:
                    reference_rows = reference_logprobs(reference, rows, indices, config)
            with timed(seconds, "forward"):
                kl = masked_mean(low_var_kl(logprobs, reference_rows), mask)
                loss = loss + config.kl_coef * kl
        with timed(seconds, "forward"):
            mean_entropy = masked_mean(entropy, mask)
            if config.entropy_coef > 0:
                loss = loss - config.entropy_coef * mean_entropy
        with timed(seconds, "backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with timed(seconds, "optimizer"):
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), config.max_grad_norm)
            optimizer.step()
        totals["policy_loss"] += surrogate.loss.item()
        totals["kl"] += kl.item()
        totals["clip_frac"] += surrogate.clip_frac.item()
        totals["entropy"] += mean_entropy.item()
        totals["grad_norm"] += float(grad_norm)
        updates += 1
        tokens += int(mask.sum().item()) + sum(len(rows.prompt_ids[i]) for i in indices)
    return UpdateStats(**{k: v / max(updates, 1) for k, v in totals.items()}, tokens=tokens, seconds=seconds)
