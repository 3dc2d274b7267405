import pytest
import torch

from gaca.policy.config import ModelConfig
from gaca.policy.model import Policy, resolve_device

from .conftest import WORDS

INPUT = torch.tensor([[5, 6, 7, 8, 1, 9]])


def logits(policy):
    with torch.no_grad():
        return policy.model(input_ids=INPUT).logits


def test_save_load_round_trip_gives_identical_logits(policy, tmp_path):
    policy.save(tmp_path)
    loaded = Policy.load(tmp_path)
    assert torch.equal(logits(loaded), logits(policy))
    assert loaded.config == policy.config
    assert loaded.tokenizer.get_vocab() == policy.tokenizer.get_vocab()
    assert loaded.encode_prompts(["go to cabinet 1 . your action :"]) == policy.encode_prompts(
        ["go to cabinet 1 . your action :"]
    )


def test_weights_depend_on_the_seed_only(make_policy):
    torch.manual_seed(1)
    first = make_policy(seed=3)
    torch.manual_seed(2)
    again = make_policy(seed=3)
    assert torch.equal(logits(first), logits(again))
    assert not torch.equal(logits(first), logits(make_policy(seed=4)))


def test_tied_embeddings_and_preset_sizes():
    words = [f"word{i}" for i in range(500)]  # 500 distinct words, like an environment vocabulary
    tiny = Policy.create(
        ModelConfig(name="tiny", device="cpu"), [w.replace("word", "w") + "x" * (i % 7) for i, w in enumerate(words)]
    )
    assert tiny.model.lm_head.weight is tiny.model.model.embed_tokens.weight
    assert 0.06e6 < tiny.num_parameters() < 0.1e6  # d=64, MLP 128, 2 layers
    small = Policy.create(ModelConfig(name="small", device="cpu"))
    assert 0.35e6 < small.num_parameters() < 0.5e6  # d=128, 2 layers


def test_a_saved_checkpoint_loads_by_path(policy, tmp_path):
    policy.model.save_pretrained(tmp_path)
    policy.tokenizer.save_pretrained(tmp_path)
    from_path = Policy.create(ModelConfig(name="path", path=str(tmp_path), device="cpu"))
    assert torch.equal(logits(from_path), logits(policy))
    assert from_path.eos_token_id == policy.eos_token_id
    text = ["search[red cotton t-shirt] . your action :"]
    assert from_path.encode_prompts(text) == policy.encode_prompts(text)


def test_device_resolution():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="model.device"):
            resolve_device("cuda")


def test_action_encoding_ends_with_eos(policy):
    assert policy.encode_actions(["open drawer 2"]) == [
        [*policy.tokenizer.encode("open drawer 2", add_special_tokens=False), 1]
    ]
    assert set(WORDS) <= set(policy.tokenizer.get_vocab()) | {"t-shirt", "b07abc"}
