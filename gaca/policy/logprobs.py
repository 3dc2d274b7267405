"""Log-probabilities and entropies of responses under the current model, for the PPO ratio and losses.

In constrained decoding the sampler draws each token from the model's distribution renormalised over
the admissible continuations (the trie's allowed ids). The PPO ratio must compare like with like, so
``sequence_logprobs(..., allowed=generation.allowed)`` renormalises over the same ids: then
``exp(new - old)`` is the ratio of the distributions actually sampled from, a position with a single
allowed token has log-prob exactly 0 (no gradient: nothing was chosen there), and the entropy is that
of the choice among admissible continuations. ``generate`` and this module share
``masked_log_softmax``, so at unchanged weights the recomputed log-probs equal the recorded ones up
to float rounding of batched vs incremental attention.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence

import numpy as np
import torch
from transformers import PreTrainedModel

from gaca.policy.config import LAST_LAYERS
from gaca.policy.last_layer import scored_logits

MASKED_SCORE = -1e30
"""Finite, unlike -inf: exp() still gives exactly 0, while 0 * -inf in the entropy would give NaN gradients."""
FILLER_TOKEN_ID = 0
"""Written at padded positions; they are masked out, so any id in the vocabulary works."""


def masked_log_softmax(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the valid entries of the last dimension; invalid ones get about -1e30.

    scores, valid: [..., K] (float, bool). Returns [..., K].
    """
    return torch.log_softmax(scores.masked_fill(~valid, MASKED_SCORE), dim=-1)


def end_logits(
    model: PreTrainedModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    keep: int,
    last_layer: str,
) -> torch.Tensor:
    """[B, keep, V] logits at the ``keep`` last positions, the last layer computed as ``last_layer`` says."""
    if last_layer == "scored_positions":
        return scored_logits(model, input_ids, attention_mask, position_ids, keep)
    return model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=False,
        logits_to_keep=keep,
    ).logits


@functools.cache
def compiled_end_logits() -> Callable[..., torch.Tensor]:
    """``end_logits`` through ``torch.compile(dynamic=True)``, made once per process: it compiles at its
    first calls (per model and setting) and moves the log-probs in their last bits."""
    return torch.compile(end_logits, dynamic=True)


def pad_allowed(allowed: Sequence[Sequence[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Allowed-id lists as a padded tensor: ids [N, K] (padding repeats the first id) and valid [N, K]."""
    lengths = np.fromiter(map(len, allowed), dtype=np.int64, count=len(allowed))
    if not len(lengths) or lengths.min() == 0:
        raise ValueError("every position needs at least one allowed id")
    flat = np.fromiter(itertools.chain.from_iterable(allowed), dtype=np.int64, count=int(lengths.sum()))
    valid = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
    firsts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    ids = np.repeat(flat[firsts][:, None], valid.shape[1], axis=1)
    ids[valid] = flat  # row-major order of the valid cells is the order of ``flat``
    return torch.from_numpy(ids).to(device), torch.from_numpy(valid).to(device)


def sequence_logprobs(
    model: PreTrainedModel,
    prompt_ids: Sequence[Sequence[int]],
    response_ids: Sequence[Sequence[int]],
    temperature: float = 1.0,
    allowed: Sequence[Sequence[Sequence[int]]] | None = None,
    last_layer: str = "every_position",
    compiled: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token log-probs and entropies of each response given its prompt, in one batched forward.

    Rows are laid out as [left-padded prompt | right-padded response] with matching attention mask and
    position ids; only the R + 1 last positions go through the LM head.

    Args:
        model: the causal LM (``Policy.model``); gradients flow unless called under ``torch.no_grad``.
        prompt_ids: B lists of prompt token ids (``Generation.prompt_ids``).
        response_ids: B non-empty lists of response token ids (``Generation.response_ids``).
        temperature: logits are divided by it, as when sampling; > 0 (greedy decoding records T = 1).
        allowed: None for the full-vocabulary distribution (free decoding, behaviour cloning), or for
            each row and response token the ids the sampler chose among (``Generation.allowed``), to
            renormalise over them as constrained decoding did.
        last_layer: every_position runs the model's own forward; scored_positions computes the last
            decoder layer at the R + 1 scored positions only (``gaca.policy.last_layer``: the same
            logits up to float rounding, for a Qwen2 model).
        compiled: the model's part through ``torch.compile`` (``compiled_end_logits``).

    Returns:
        logprobs [B, R] float32, entropy [B, R] float32 and response_mask [B, R] float32 (1 on response
        tokens), where R is the longest response; padded positions hold 0.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 to score tokens, got {temperature!r}")
    if len(prompt_ids) != len(response_ids) or (allowed is not None and len(allowed) != len(response_ids)):
        raise ValueError("prompt_ids, response_ids (and allowed) must have one entry per row")
    if last_layer not in LAST_LAYERS:
        raise ValueError(f"last_layer must be one of {', '.join(LAST_LAYERS)}, got {last_layer!r}")
    if any(len(ids) == 0 for ids in response_ids):
        raise ValueError("every response needs at least one token (decoding always emits one)")
    device = model.device
    prompt_width = max(len(ids) for ids in prompt_ids)
    response_width = max(len(ids) for ids in response_ids)
    rows, attention = [], []
    for prompt, response in zip(prompt_ids, response_ids):
        left = prompt_width - len(prompt)
        right = response_width - len(response)
        rows.append([FILLER_TOKEN_ID] * left + list(prompt) + list(response) + [FILLER_TOKEN_ID] * right)
        attention.append([0] * left + [1] * (len(prompt) + len(response)) + [0] * right)
    input_ids = torch.tensor(rows, dtype=torch.long, device=device)
    attention_mask = torch.tensor(attention, dtype=torch.long, device=device)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    keep = response_width + 1
    forward = compiled_end_logits() if compiled else end_logits
    kept = forward(model, input_ids, attention_mask, position_ids, keep, last_layer)
    logits = kept[:, :-1].float() / temperature  # [B, R, V]: position t predicts response token t
    targets = input_ids[:, prompt_width:]  # [B, R]
    response_mask = attention_mask[:, prompt_width:].float()

    if allowed is None:
        log_probs = torch.log_softmax(logits, dim=-1)
        chosen = targets
    else:
        per_position: list[Sequence[int]] = []
        for row, (response, row_allowed) in enumerate(zip(response_ids, allowed)):
            if len(row_allowed) != len(response):
                raise ValueError(f"allowed[{row}] has {len(row_allowed)} positions for {len(response)} response tokens")
            per_position.extend(row_allowed)
            # Padded positions: a single allowed id, so the padded row stays a valid distribution.
            per_position.extend([[FILLER_TOKEN_ID]] * (response_width - len(response)))
        ids, valid = pad_allowed(per_position, device)  # [B * R, K]
        match = (ids == targets.reshape(-1, 1)) & valid
        missing = (~match.any(-1)).nonzero()
        if len(missing):
            row, position = divmod(int(missing[0]), response_width)
            raise ValueError(
                f"response token {response_ids[row][position]} of row {row}, position {position} is not in its "
                "allowed ids"
            )
        batch = len(response_ids)
        ids = ids.view(batch, response_width, -1)
        valid = valid.view(batch, response_width, -1)
        log_probs = masked_log_softmax(logits.gather(-1, ids), valid)  # [B, R, K]
        chosen = match.view(batch, response_width, -1).int().argmax(-1)  # each id appears once in its list

    token_logprobs = log_probs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    return token_logprobs * response_mask, entropy * response_mask, response_mask
