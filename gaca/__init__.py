"""GACA: granularity-adaptive credit assignment for long-horizon LLM agent RL.

The estimator API is imported on first use (PEP 562), so commands that never touch tensors
(``gaca report``, ``gaca status``) start without importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = [
    "AdvantageConfig",
    "AdvantageOutput",
    "broadcast_to_tokens",
    "compute_advantages",
    "gate_weight",
    "mean_token_nll",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'gaca' has no attribute {name!r}")
    return getattr(importlib.import_module("gaca.estimators"), name)
