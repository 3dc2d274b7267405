"""The advantage estimators: GRPO, GiGPO and GACA with every control of the paper."""

from gaca.estimators.config import AdvantageConfig
from gaca.estimators.core import ESTIMATORS, AdvantageOutput, compute_advantages
from gaca.estimators.detectors import DETECTORS
from gaca.estimators.gate import gate_weight
from gaca.estimators.tokens import broadcast_to_tokens, mean_token_nll

__all__ = [
    "DETECTORS",
    "ESTIMATORS",
    "AdvantageConfig",
    "AdvantageOutput",
    "broadcast_to_tokens",
    "compute_advantages",
    "gate_weight",
    "mean_token_nll",
]
