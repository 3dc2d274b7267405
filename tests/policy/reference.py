"""A plain loop reference for generation: one row at a time, no padding, no KV cache."""

from __future__ import annotations

import torch

from gaca.policy.model import Policy


def reference_logprobs(
    policy: Policy, prompt_ids: list[int], response_ids: list[int], temperature: float, admissible: list[str] | None
) -> tuple[list[float], list[int]]:
    """Log-prob of each response token given the full prefix (a fresh forward per token), and the
    greedy token at each position, under the trie mask when ``admissible`` is given."""
    scale = temperature if temperature > 0 else 1.0
    node = policy.command_trie(admissible).root if admissible is not None else None
    prefix = list(prompt_ids)
    logprobs, greedy = [], []
    with torch.no_grad():
        for token in response_ids:
            logits = policy.model(input_ids=torch.tensor([prefix])).logits[0, -1].float() / scale
            if node is None:
                log_probs = torch.log_softmax(logits, dim=-1)
                logprobs.append(log_probs[token].item())
                greedy.append(int(log_probs.argmax()))
            else:
                log_probs = torch.log_softmax(logits[node.allowed], dim=-1)
                logprobs.append(log_probs[node.allowed.index(token)].item())
                greedy.append(node.allowed[int(log_probs.argmax())])
                node = node.children[token]
            prefix.append(token)
    return logprobs, greedy
