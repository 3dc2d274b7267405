"""Batched action generation over all live environments: one prefill, then one cached step per token."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import torch
from transformers import Cache, PreTrainedModel, PreTrainedTokenizerBase

from gaca.policy.logprobs import FILLER_TOKEN_ID, masked_log_softmax, pad_allowed
from gaca.policy.model import Policy
from gaca.policy.trie import CommandTrie, TrieNode
from gaca.registry import Registry


@dataclass
class Generation:
    """One action per prompt, with what PPO needs to score it again."""

    actions: list[str]
    """The command sent to each environment."""
    response_ids: list[list[int]]
    """Generated token ids per row; ends with eos unless free decoding hit max_response_tokens."""
    logprobs: list[list[float]]
    """Log-prob of each response token under the distribution it was sampled from (the old log-probs)."""
    prompt_ids: list[list[int]]
    """The truncated prompt token ids per row."""
    allowed: list[list[list[int]]] | None
    """Constrained decoding: per row and response token, the ids it was chosen among (pass to
    ``sequence_logprobs(allowed=...)``; the lists are shared with the trie cache, never mutate them);
    None for free decoding (full vocabulary)."""


class Decoder(ABC):
    """Chooses the next token of every row from its logits and keeps the rows' responses."""

    def __init__(self, policy: Policy, admissible: Sequence[Sequence[str]] | None, batch_size: int) -> None:
        if admissible is not None and len(admissible) != batch_size:
            raise ValueError(f"got {len(admissible)} admissible lists for {batch_size} prompts")
        self.policy = policy
        self.response_ids: list[list[int]] = [[] for _ in range(batch_size)]
        self.logprobs: list[list[float]] = [[] for _ in range(batch_size)]
        self.done = batch_size == 0

    @abstractmethod
    def step(self, logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
        """Choose the next tokens from logits [B, V] (float32); returns [B] ids to feed back (filler for
        finished rows) and sets ``done`` once every row has finished."""

    @abstractmethod
    def result(self, prompt_ids: list[list[int]]) -> Generation:
        """The finished generation."""


DECODERS: Registry[type[Decoder]] = Registry("decoding")


def _sample(log_probs: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
    """Indices [N, 1] drawn from log_probs [N, K]; the argmax when temperature is 0."""
    if temperature == 0:
        return log_probs.argmax(dim=-1, keepdim=True)
    return torch.multinomial(log_probs.exp(), 1, generator=generator)


@DECODERS.register("constrained")
class ConstrainedDecoder(Decoder):
    """Samples only continuations of admissible commands: logits outside the row's trie node's allowed ids
    are masked before the (temperature-scaled) softmax; a row stops once its command's eos is emitted.
    When every unfinished row has a single possible rest, it is appended without further forward passes."""

    def __init__(self, policy: Policy, admissible: Sequence[Sequence[str]] | None, batch_size: int) -> None:
        if admissible is None:
            raise ValueError("constrained decoding needs the admissible commands of every prompt")
        super().__init__(policy, admissible, batch_size)
        tries: list[CommandTrie] = []
        for row, commands in enumerate(admissible):
            if not commands:
                raise ValueError(f"constrained decoding: prompt {row} has no admissible commands")
            tries.append(policy.command_trie(commands))
        self.nodes: list[TrieNode | None] = [trie.root for trie in tries]
        self.actions: list[str] = [""] * batch_size
        self.allowed: list[list[list[int]]] = [[] for _ in range(batch_size)]
        self._complete_forced()

    def step(self, logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
        device = logits.device
        active = [row for row, node in enumerate(self.nodes) if node is not None]
        options = [node.allowed for node in self.nodes if node is not None]
        ids, valid = pad_allowed(options, device)  # [A, K]
        rows = torch.tensor(active, dtype=torch.long, device=device)
        scale = temperature if temperature > 0 else 1.0
        log_probs = masked_log_softmax(logits[rows].gather(1, ids) / scale, valid)
        choice = _sample(log_probs, temperature, generator)
        chosen_tokens = ids.gather(1, choice).squeeze(1)
        chosen_logprobs = log_probs.gather(1, choice).squeeze(1)
        tokens = torch.full((logits.shape[0],), FILLER_TOKEN_ID, dtype=torch.long, device=device)
        tokens[rows] = chosen_tokens
        for row, token, logprob, allowed in zip(active, chosen_tokens.tolist(), chosen_logprobs.tolist(), options):
            self._advance(row, token, logprob, allowed)
        self._complete_forced()
        return tokens

    def _advance(self, row: int, token: int, logprob: float, allowed: list[int]) -> None:
        node = cast(TrieNode, self.nodes[row]).children[token]  # called for live rows only
        self.response_ids[row].append(token)
        self.logprobs[row].append(logprob)
        self.allowed[row].append(allowed)
        if node.children:
            self.nodes[row] = node
        else:
            self.nodes[row] = None
            self.actions[row] = cast(str, node.command)  # a leaf is reached by a command's eos, which sets it

    def _complete_forced(self) -> None:
        # Forced tokens have log-prob 0 under the renormalised distribution, so no forward pass is needed.
        if any(node is not None and node.forced is None for node in self.nodes):
            return
        for row, node in enumerate(self.nodes):
            if node is not None:
                for token in cast(list[int], node.forced):  # the check above: no live row lacks it
                    self._advance(row, token, 0.0, [token])
        self.done = True

    def result(self, prompt_ids: list[list[int]]) -> Generation:
        return Generation(self.actions, self.response_ids, self.logprobs, prompt_ids, self.allowed)


@DECODERS.register("free")
class FreeDecoder(Decoder):
    """Samples from the whole vocabulary until eos or ``max_response_tokens``. The action is the decoded
    text, except that a response whose ids spell an admissible command (eos included) becomes exactly
    that command: a word-level tokenizer cannot restore spacing such as "search[red shirt]"."""

    def __init__(self, policy: Policy, admissible: Sequence[Sequence[str]] | None, batch_size: int) -> None:
        super().__init__(policy, admissible, batch_size)
        self.tries = [policy.command_trie(c) if c else None for c in admissible] if admissible is not None else None
        self.finished = [False] * batch_size

    def step(self, logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
        scale = temperature if temperature > 0 else 1.0
        log_probs = torch.log_softmax(logits / scale, dim=-1)
        choice = _sample(log_probs, temperature, generator)
        chosen_logprobs = log_probs.gather(1, choice).squeeze(1)
        tokens = choice.squeeze(1)
        eos, limit = self.policy.eos_token_id, self.policy.config.max_response_tokens
        for row, (token, logprob) in enumerate(zip(tokens.tolist(), chosen_logprobs.tolist())):
            if self.finished[row]:
                continue
            self.response_ids[row].append(token)
            self.logprobs[row].append(logprob)
            self.finished[row] = token == eos or len(self.response_ids[row]) == limit
        self.done = all(self.finished)
        return tokens

    def result(self, prompt_ids: list[list[int]]) -> Generation:
        tokenizer = self.policy.tokenizer
        actions = [
            response_action(ids, self.tries[row] if self.tries is not None else None, tokenizer)
            for row, ids in enumerate(self.response_ids)
        ]
        return Generation(actions, self.response_ids, self.logprobs, prompt_ids, None)


def response_action(response_ids: Sequence[int], trie: CommandTrie | None, tokenizer: PreTrainedTokenizerBase) -> str:
    """The action a free-decoded response stands for: the admissible command its ids spell, eos included
    (``trie.command_for``), else its decoded text without special tokens, stripped. A response cut at
    ``max_response_tokens`` has no eos, so it is never mapped onto a command. The CPU backend and the
    environments it serves to verl-agent (``gaca.backends.verl.agent.env_manager``) both parse responses here."""
    command = trie.command_for(response_ids) if trie is not None else None
    if command is None:
        # decode gives one str for one sequence of ids (a list only for a batch of them)
        command = cast(str, tokenizer.decode(list(response_ids), skip_special_tokens=True)).strip()
    return command


def generate(
    policy: Policy,
    prompts: Sequence[str],
    admissible: Sequence[Sequence[str]] | None = None,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Generation:
    """Generate one action per prompt in a single batch, with the KV cache, by ``policy.config.decoding``.

    Prompts are encoded and cut from the left to ``max_prompt_tokens``, left-padded, and run through
    the model once (identical prompts, common within a rollout group, only once); then each new token
    is one cached forward of [B, 1]. Sampling is at ``temperature`` with ``generator`` (e.g.
    ``policy.generator(seed)``; None uses torch's global RNG); temperature 0 is greedy, and then the
    recorded log-probs are those of the untempered (T = 1) distribution.

    Args:
        policy: the model, tokenizer and decoding settings.
        prompts: B prompt strings (``build_prompt``).
        admissible: B lists of admissible commands; required for constrained decoding, optional for free
            decoding (where it only maps responses back onto exact command strings).
        temperature: >= 0.
        generator: RNG on ``policy.device``.
    """
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    prompt_ids = policy.encode_prompts(prompts)
    decoder = DECODERS.get(policy.config.decoding)(policy, admissible, len(prompt_ids))
    if decoder.done:
        return decoder.result(prompt_ids)
    model = policy.model
    with torch.inference_mode():
        logits, cache, attention_mask, positions = _prefill(model, prompt_ids)
        ones = torch.ones_like(attention_mask[:, :1])
        while True:
            tokens = decoder.step(logits, temperature, generator)
            if decoder.done:
                break
            attention_mask = torch.cat([attention_mask, ones], dim=1)
            positions = positions + 1
            output = model(
                input_ids=tokens.unsqueeze(1),
                attention_mask=attention_mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
            )
            logits = output.logits[:, -1].float()
    return decoder.result(prompt_ids)


def _prefill(
    model: PreTrainedModel, prompt_ids: list[list[int]]
) -> tuple[torch.Tensor, Cache, torch.Tensor, torch.Tensor]:
    """Run the distinct left-padded prompts once and expand to all rows.

    Returns next-token logits [B, V] float32, the KV cache, the attention mask [B, P] and the position
    ids [B, 1] of the last prompt token.
    """
    device = model.device
    distinct: dict[tuple[int, ...], int] = {}
    row_to_distinct = [distinct.setdefault(tuple(ids), len(distinct)) for ids in prompt_ids]
    width = max(len(ids) for ids in distinct)
    input_ids = torch.tensor(
        [[FILLER_TOKEN_ID] * (width - len(ids)) + list(ids) for ids in distinct], dtype=torch.long, device=device
    )
    attention_mask = torch.tensor(
        [[0] * (width - len(ids)) + [1] * len(ids) for ids in distinct], dtype=torch.long, device=device
    )
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    output = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=True,
        logits_to_keep=1,
    )
    logits, cache = output.logits[:, -1].float(), output.past_key_values
    if len(distinct) < len(prompt_ids):
        select = torch.tensor(row_to_distinct, dtype=torch.long, device=device)
        cache.reorder_cache(select)
        logits, attention_mask, position_ids = logits[select], attention_mask[select], position_ids[select]
    return logits, cache, attention_mask, position_ids[:, -1:]
