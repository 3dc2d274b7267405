"""Shared fixtures: small word vocabularies and tiny policies built in milliseconds."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from gaca.policy.config import ModelConfig
from gaca.policy.model import Policy

WORDS = (
    "go to take from put in on open close closed examine countertop cabinet drawer fridge mug apple knife "
    "search click buy now red blue cotton t-shirt b07abc kitchen you are the a of with is . , [ ]"
).split()
"""An environment-like vocabulary: lowercase words and punctuation, a hyphenated word, a product id."""

TINY_TEST_SIZES = dict(hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=64)
"""Smaller than the tiny preset: the tests check behaviour, not capacity."""


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models gain nothing from a second thread, and OpenMP threads slow down >10x when other
    processes share the two cores; restored afterwards so other test folders keep their setting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def make_policy() -> Callable[..., Policy]:
    def make(seed: int = 0, words: tuple[str, ...] | list[str] = tuple(WORDS), **overrides) -> Policy:
        # Constrained unless a test asks for free decoding: most generation tests check the admissible mask.
        values = {"name": "tiny", "device": "cpu", "decoding": "constrained", **TINY_TEST_SIZES, **overrides}
        return Policy.create(ModelConfig(**values), words, seed=seed)

    return make


@pytest.fixture(scope="module")
def policy(make_policy) -> Policy:
    return make_policy()


@pytest.fixture(scope="module")
def free_policy(make_policy) -> Policy:
    return make_policy(decoding="free", max_response_tokens=5)
