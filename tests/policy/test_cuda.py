"""The same checks on a GPU; skipped where torch sees none (CI)."""

import pytest
import torch

from gaca.policy.bc import behaviour_clone
from gaca.policy.generation import generate
from gaca.policy.logprobs import sequence_logprobs
from gaca.policy.model import Policy

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

ADMISSIBLE = [
    ["go to cabinet 1", "go to cabinet 12", "take mug 1 from countertop 2"],
    ["search[red t-shirt]", "click[b07abc]"],
] * 4


@pytest.mark.parametrize("decoding", ["constrained", "free"])
def test_generation_and_recomputed_logprobs_on_cuda(make_policy, decoding):
    policy = make_policy(decoding=decoding, device="auto")
    assert policy.device.type == "cuda"
    prompts = [f"you see a mug {row} . your action :" for row in range(len(ADMISSIBLE))]
    generation = generate(policy, prompts, ADMISSIBLE, 1.0, policy.generator(0))
    assert generation == generate(policy, prompts, ADMISSIBLE, 1.0, policy.generator(0))
    if decoding == "constrained":
        assert all(action in commands for action, commands in zip(generation.actions, ADMISSIBLE))
    recomputed, _, mask = sequence_logprobs(
        policy.model, generation.prompt_ids, generation.response_ids, 1.0, generation.allowed
    )
    assert recomputed.device.type == "cuda"
    for row, recorded in enumerate(generation.logprobs):
        torch.testing.assert_close(recomputed[row, : len(recorded)].cpu(), torch.tensor(recorded), atol=1e-4, rtol=0)


def test_cloning_and_round_trip_to_cpu(make_policy, tmp_path):
    policy = make_policy(device="cuda")
    losses = behaviour_clone(policy, [("say open drawer 2 . your action :", "open drawer 2")] * 8, 20, 1e-2, 4, 0)
    assert losses[-1] < losses[0]
    policy.save(tmp_path)
    on_cpu = Policy.load(tmp_path, device="cpu")
    ids = torch.tensor([[5, 6, 7, 1]])
    with torch.no_grad():
        torch.testing.assert_close(
            on_cpu.model(input_ids=ids).logits, policy.model(input_ids=ids.cuda()).logits.cpu(), atol=1e-4, rtol=0
        )
