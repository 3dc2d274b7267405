"""The advantage estimators: GRPO, GiGPO and GACA with every control of the paper.

The names below are imported on first use, so that the config (``gaca.estimators.config``) and the
registry of estimators and detectors with their specs (``gaca.estimators.registry``) can be read
without importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "AdvantageConfig": "gaca.estimators.config",
    "AdvantageOutput": "gaca.estimators.core",
    "compute_advantages": "gaca.estimators.core",
    "DETECTORS": "gaca.estimators.registry",
    "ESTIMATORS": "gaca.estimators.registry",
    "DetectorSpec": "gaca.estimators.registry",
    "EstimatorSpec": "gaca.estimators.registry",
    "gate_weight": "gaca.estimators.gate",
    "broadcast_to_tokens": "gaca.estimators.tokens",
    "mean_token_nll": "gaca.estimators.tokens",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'gaca.estimators' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
