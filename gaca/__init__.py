"""GACA: granularity-adaptive credit assignment for long-horizon LLM agent RL."""

from gaca.estimators import (
    AdvantageConfig,
    AdvantageOutput,
    broadcast_to_tokens,
    compute_advantages,
    gate_weight,
    mean_token_nll,
)

__all__ = [
    "AdvantageConfig",
    "AdvantageOutput",
    "broadcast_to_tokens",
    "compute_advantages",
    "gate_weight",
    "mean_token_nll",
]
__version__ = "0.1.0"
