"""The verl tests' batches: ``gaca.backends.verl.agent.layout`` (verl-agent's exact layout and its reference)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gaca.backends.verl.agent.layout import LayoutBatch, build_layout_batch


@pytest.fixture
def layout_batch() -> Callable[..., LayoutBatch]:
    return build_layout_batch


@pytest.fixture
def fresh_hydra():
    """Hydra's global state cleared after the test (its compose API leaves it set)."""
    yield
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
