import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gaca.policy.generation import generate
from gaca.policy.logprobs import sequence_logprobs
from gaca.policy.prompt import build_prompt

from .reference import reference_logprobs

NOUNS = ["mug", "apple", "knife", "cabinet", "drawer", "countertop", "fridge"]
PLAIN = st.lists(
    st.sampled_from(["go to", "take", "put", "open", *NOUNS, "from", "in", *"123"]), min_size=1, max_size=5
)
BRACKETED = st.lists(st.sampled_from(["red", "blue", "cotton", "t-shirt", "b07abc"]), min_size=1, max_size=3)
COMMAND = st.one_of(
    PLAIN.map(" ".join),
    BRACKETED.map(lambda words: f"search[{' '.join(words)}]"),
    BRACKETED.map(lambda words: f"click[{' '.join(words)}]"),
)
ADMISSIBLE_SETS = st.lists(st.lists(COMMAND, min_size=1, max_size=6, unique=True), min_size=1, max_size=5)
HISTORY = [("you are in the kitchen .", "go to cabinet 1"), ("the cabinet is closed .", "open cabinet 1")]


def prompts_for(admissible_sets, show_admissible=False):
    return [
        build_prompt(
            f"put a mug in cabinet {row}",
            "you see a mug .",
            HISTORY[: row % 3],
            commands if show_admissible else None,
            2,
        )
        for row, commands in enumerate(admissible_sets)
    ]


@settings(max_examples=40, deadline=None)
@given(
    admissible=ADMISSIBLE_SETS,
    temperature=st.sampled_from([1.0, 0.7, 0.0]),
    seed=st.integers(0, 2**16),
    show_admissible=st.booleans(),
)
def test_constrained_actions_are_admissible_and_logprobs_recompute(
    policy, admissible, temperature, seed, show_admissible
):
    prompts = prompts_for(admissible, show_admissible)
    generation = generate(policy, prompts, admissible, temperature, policy.generator(seed))
    for row, commands in enumerate(admissible):
        assert generation.actions[row] in commands
        [expected_ids] = policy.encode_actions([generation.actions[row]])
        assert generation.response_ids[row] == expected_ids
        assert [len(a) for a in generation.allowed[row]] and len(generation.allowed[row]) == len(expected_ids)
        assert all(lp <= 0 for lp in generation.logprobs[row])
    recomputed, entropy, mask = sequence_logprobs(
        policy.model, generation.prompt_ids, generation.response_ids, temperature or 1.0, generation.allowed
    )
    for row, recorded in enumerate(generation.logprobs):
        n = len(recorded)
        assert mask[row, :n].eq(1).all() and mask[row, n:].eq(0).all()
        torch.testing.assert_close(recomputed[row, :n], torch.tensor(recorded), atol=1e-5, rtol=0)
        assert entropy[row, :n].ge(-1e-6).all()


def test_single_admissible_command_has_zero_logprobs(policy):
    generation = generate(
        policy, prompts_for([["take mug 1 from countertop 2"]] * 3), [["take mug 1 from countertop 2"]] * 3
    )
    assert generation.actions == ["take mug 1 from countertop 2"] * 3
    assert all(lp == 0.0 for row in generation.logprobs for lp in row)
    recomputed, entropy, _ = sequence_logprobs(
        policy.model, generation.prompt_ids, generation.response_ids, allowed=generation.allowed
    )
    assert recomputed.abs().max() == 0 and entropy.abs().max() == 0


def test_temperature_zero_is_deterministic_and_greedy(policy):
    admissible = [
        ["go to cabinet 1", "go to drawer 2", "open fridge 1"],
        ["take apple 1 from fridge 1", "put apple 1 in drawer 3"],
    ]
    first = generate(policy, prompts_for(admissible), admissible, temperature=0.0)
    second = generate(policy, prompts_for(admissible), admissible, temperature=0.0, generator=policy.generator(123))
    assert first == second
    for row, commands in enumerate(admissible):
        _, greedy = reference_logprobs(policy, first.prompt_ids[row], first.response_ids[row], 0.0, commands)
        assert greedy == first.response_ids[row]


@pytest.mark.parametrize("decoding", ["constrained", "free"])
def test_same_seed_same_generation(make_policy, decoding):
    policy = make_policy(decoding=decoding)
    admissible = [["go to cabinet 1", "go to drawer 2", "open fridge 1", "search[red t-shirt]"]] * 8
    runs = [generate(policy, prompts_for(admissible), admissible, 1.0, policy.generator(seed)) for seed in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0].response_ids != runs[2].response_ids


@pytest.mark.parametrize("decoding", ["constrained", "free"])
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_cached_batch_matches_uncached_row_by_row_reference(make_policy, decoding, temperature):
    policy = make_policy(decoding=decoding, max_response_tokens=6)
    admissible = [
        ["go to cabinet 1", "go to cabinet 12", "go to drawer 2"],
        ["take apple 1 from fridge 1", "put apple 1 in drawer 3", "search[red cotton t-shirt]"],
        ["go to cabinet 1", "go to cabinet 12", "go to drawer 2"],
        ["open fridge 1", "click[b07abc]"],
    ]
    # Rows 0 and 2 share a prompt (deduplicated prefill); prompts differ in length (left padding).
    prompts = prompts_for(admissible)
    prompts[2] = prompts[0]
    generation = generate(policy, prompts, admissible, temperature, policy.generator(3))
    for row, commands in enumerate(admissible):
        expected, _ = reference_logprobs(
            policy,
            generation.prompt_ids[row],
            generation.response_ids[row],
            temperature,
            commands if decoding == "constrained" else None,
        )
        torch.testing.assert_close(torch.tensor(generation.logprobs[row]), torch.tensor(expected), atol=1e-5, rtol=0)


def test_free_decoding_stops_at_eos_or_the_token_limit(free_policy):
    admissible = [["go to cabinet 1", "open fridge 1"]] * 16
    generation = generate(free_policy, prompts_for(admissible), admissible, 1.0, free_policy.generator(0))
    eos, limit = free_policy.eos_token_id, free_policy.config.max_response_tokens
    for ids, logprobs in zip(generation.response_ids, generation.logprobs):
        assert 1 <= len(ids) <= limit and len(logprobs) == len(ids)
        assert eos not in ids[:-1]
        assert ids[-1] == eos or len(ids) == limit
    assert generation.allowed is None


@pytest.mark.parametrize("eos_bias, expected_length", [(100.0, 1), (-100.0, 5)])
def test_free_decoding_with_eos_forced_or_suppressed(free_policy, eos_bias, expected_length):
    eos = free_policy.eos_token_id

    def bias_eos(module, args, output):
        output.logits[..., eos] += eos_bias

    handle = free_policy.model.register_forward_hook(bias_eos)
    try:
        generation = generate(free_policy, prompts_for([["open fridge 1"]] * 4), None, 1.0, free_policy.generator(0))
    finally:
        handle.remove()
    assert all(len(ids) == expected_length for ids in generation.response_ids)
    assert all((ids[-1] == eos) == (eos_bias > 0) for ids in generation.response_ids)
    if eos_bias > 0:
        assert generation.actions == [""] * 4


def test_empty_batch(policy):
    generation = generate(policy, [], [])
    assert generation.actions == [] and generation.response_ids == []


def test_constrained_decoding_rejects_missing_admissible(policy):
    with pytest.raises(ValueError, match="admissible"):
        generate(policy, prompts_for([["a"]]), None)
    with pytest.raises(ValueError, match="prompt 0 has no admissible"):
        generate(policy, prompts_for([["a"]]), [[]])
    with pytest.raises(ValueError, match="temperature"):
        generate(policy, prompts_for([["a"]]), [["a"]], temperature=-1.0)
