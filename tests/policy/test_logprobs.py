import pytest
import torch

from gaca.policy.generation import generate
from gaca.policy.logprobs import sequence_logprobs

PROMPTS = [[5, 6, 7, 8, 9], [10, 11]]
RESPONSES = [[12, 13, 1], [14, 1]]


def test_full_vocabulary_matches_unpadded_rows(policy):
    logprobs, entropy, mask = sequence_logprobs(policy.model, PROMPTS, RESPONSES, temperature=2.0)
    assert logprobs.shape == entropy.shape == mask.shape == (2, 3)
    assert mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    with torch.no_grad():
        for row, (prompt, response) in enumerate(zip(PROMPTS, RESPONSES)):
            logits = policy.model(input_ids=torch.tensor([prompt + response])).logits[0].float() / 2.0
            log_probs = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
            expected = log_probs.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)
            torch.testing.assert_close(logprobs[row, : len(response)], expected, atol=1e-5, rtol=0)
            expected_entropy = -(log_probs.exp() * log_probs).sum(-1)
            torch.testing.assert_close(entropy[row, : len(response)], expected_entropy, atol=1e-5, rtol=0)
    assert logprobs[1, 2] == 0 and entropy[1, 2] == 0


def test_allowed_renormalises_and_gradients_stay_finite(policy):
    allowed = [[[12, 20, 21], [13], [1, 22]], [[14, 15], [1]]]
    logprobs, entropy, mask = sequence_logprobs(policy.model, PROMPTS, RESPONSES, allowed=allowed)
    assert logprobs[0, 1] == 0 and logprobs[1, 1] == 0  # one allowed id: nothing was chosen
    with torch.no_grad():
        logits = (
            policy.model(input_ids=torch.tensor([PROMPTS[0] + RESPONSES[0]])).logits[0, len(PROMPTS[0]) - 1].float()
        )
        expected = torch.log_softmax(logits[[12, 20, 21]], dim=-1)[0]
    torch.testing.assert_close(logprobs[0, 0], expected, atol=1e-5, rtol=0)
    policy.model.zero_grad(set_to_none=True)
    ((logprobs * mask).sum() + (entropy * mask).sum()).backward()
    gradients = [p.grad for p in policy.model.parameters() if p.grad is not None]
    assert gradients and all(torch.isfinite(g).all() for g in gradients)
    assert any(g.abs().sum() > 0 for g in gradients)
    policy.model.zero_grad(set_to_none=True)


def test_generation_allowed_feed_back_in(policy):
    admissible = [["go to cabinet 1", "go to drawer 2", "open fridge 1"]] * 2
    generation = generate(
        policy, ["your action :", "you see a mug . your action :"], admissible, 1.0, policy.generator(1)
    )
    recomputed, _, _ = sequence_logprobs(
        policy.model, generation.prompt_ids, generation.response_ids, 1.0, generation.allowed
    )
    for row, recorded in enumerate(generation.logprobs):
        torch.testing.assert_close(recomputed[row, : len(recorded)], torch.tensor(recorded), atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(temperature=0.0), "temperature"),
        (dict(allowed=[[[12], [13], [1]]]), "one entry per row"),
        (dict(allowed=[[[12], [13]], [[14], [1]]]), r"allowed\[0\] has 2 positions"),
        (dict(allowed=[[[12], [99], [1]], [[14], [1]]]), "not in its allowed ids"),
    ],
)
def test_bad_inputs(policy, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sequence_logprobs(policy.model, PROMPTS, RESPONSES, **kwargs)
