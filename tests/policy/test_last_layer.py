"""``last_layer=scored_positions`` gives the logits, log-probs and gradients of the model's own forward:
the last decoder layer computed at the scored positions only, with left-padded prompts, right-padded
responses, several layers, and constrained decoding's renormalisation; a model it cannot run is one
clear error."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from gaca.policy.last_layer import scored_logits
from gaca.policy.logprobs import sequence_logprobs

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17]]
RESPONSES = [[18, 1], [19, 20, 21, 1], [22]]
ALLOWED = [[[18, 23], [1, 24]], [[19, 25, 26], [20], [21, 27], [1, 28]], [[22, 29]]]


def padded_batch(prompts, responses):
    """The [left-padded prompt | right-padded response] grid that ``sequence_logprobs`` builds."""
    width, reach = max(map(len, prompts)), max(map(len, responses))
    ids = [[0] * (width - len(p)) + p + r + [0] * (reach - len(r)) for p, r in zip(prompts, responses)]
    mask = [
        [0] * (width - len(p)) + [1] * (len(p) + len(r)) + [0] * (reach - len(r)) for p, r in zip(prompts, responses)
    ]
    attention = torch.tensor(mask)
    return torch.tensor(ids), attention, (attention.cumsum(-1) - 1).clamp(min=0), reach + 1


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_the_kept_logits_are_the_models_own(make_policy, num_layers):
    model = make_policy(seed=num_layers, num_layers=num_layers).model
    input_ids, attention, positions, keep = padded_batch(PROMPTS, RESPONSES)
    with torch.no_grad():
        expected = model(
            input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=False, logits_to_keep=keep
        ).logits
        kept = scored_logits(model, input_ids, attention, positions, keep)
    assert kept.shape == expected.shape == (3, keep, model.config.vocab_size)
    real = attention[:, -keep:].bool()  # right padding: those logits are masked out downstream
    real[:, 0] = True  # the last prompt token predicts the first response token
    torch.testing.assert_close(kept[real], expected[real], atol=1e-5, rtol=0)
    assert float(expected[real].std()) > 1e-3  # logits worth comparing


@pytest.mark.parametrize("constrained", [False, True])
def test_log_probs_entropies_and_gradients_equal_the_full_forwards(make_policy, constrained):
    policy = make_policy(seed=7)
    allowed = ALLOWED if constrained else None
    results = []
    for last_layer in ("every_position", "scored_positions"):
        policy.model.zero_grad(set_to_none=True)
        logprobs, entropy, mask = sequence_logprobs(policy.model, PROMPTS, RESPONSES, 1.3, allowed, last_layer)
        ((logprobs * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
        gradients = {name: p.grad.clone() for name, p in policy.model.named_parameters() if p.grad is not None}
        results.append((logprobs.detach(), entropy.detach(), mask, gradients))
    (old, old_entropy, old_mask, old_grads), (new, new_entropy, new_mask, new_grads) = results
    assert torch.equal(new_mask, old_mask)
    torch.testing.assert_close(new, old, atol=1e-6, rtol=0)
    torch.testing.assert_close(new_entropy, old_entropy, atol=1e-6, rtol=0)
    assert new_grads.keys() == old_grads.keys()
    # every weight of the model is reached (the last layer's too, through the kept positions)
    assert {name for name, _ in policy.model.named_parameters()} == set(old_grads)
    for name, gradient in old_grads.items():
        torch.testing.assert_close(new_grads[name], gradient, atol=1e-6, rtol=0, msg=name)
    assert max(float(g.abs().max()) for g in old_grads.values()) > 1e-3


def test_a_model_other_than_qwen2_is_one_clear_error():
    config = LlamaConfig(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    model = LlamaForCausalLM(config)
    with pytest.raises(ValueError, match=r"scored_positions needs a Qwen2 causal LM, got LlamaForCausalLM"):
        sequence_logprobs(model, [[5, 6]], [[7]], last_layer="scored_positions")


def test_an_unknown_last_layer_names_the_choices(policy):
    with pytest.raises(ValueError, match=r"last_layer must be one of every_position, scored_positions, got 'some'"):
        sequence_logprobs(policy.model, [[5, 6]], [[7]], last_layer="some")
