"""The estimator's configuration: one frozen dataclass, validated once at the boundary."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

METHODS = ("grpo", "gigpo", "gaca")
NORMS = ("mean_std", "mean")
DETECTORS = ("entropy", "uniform", "random", "loo")
SINGLETON_FALLBACKS = ("prompt_group", "zero")


@dataclass(frozen=True)
class AdvantageConfig:
    """Options of the advantage estimators (ESTIMATOR-SPEC.md; paper Eqs. 2-8).

    Defaults are the spec's. Every field is checked in ``__post_init__``; a bad value raises
    ``ValueError`` naming the field and what it may be.
    """

    method: str = "gaca"
    """grpo: episode level only (Eq. 2); gigpo: A^E + w A^S (Eq. 3); gaca: the gated mixture (Eq. 8)."""
    gamma: float = 0.95
    """Discount of the step return g_t, in (0, 1]."""
    norm: str = "mean_std"
    """Group normalisation at both levels: mean_std = (x - mean) / (std + eps); mean = x - mean."""
    eps: float = 1e-6
    """Added to the group std before dividing, > 0."""
    step_weight: float = 1.0
    """w: the weight of the step-level advantage, >= 0."""
    lambda0: float = 0.5
    """Base mixing weight of the gate (Eq. 7), in [0, 1]."""
    alpha_lambda: float = 0.5
    """Upward modulation above average criticality (c >= 1), >= 0."""
    beta_lambda: float = 0.5
    """Downward modulation below average criticality (c < 1), >= 0."""
    alpha_c: float = 1.0
    """Weight of the entropy term in the fused score (Eq. 6); 1 = pure entropy, in [0, 1]."""
    detector: str = "entropy"
    """How c_t is formed: entropy, uniform (c = 1), random (entropy c permuted), loo (debiased)."""
    singleton_fallback: str = "prompt_group"
    """A^S of a step alone in its anchor group: normalise over the prompt group, or zero (original GiGPO)."""
    seed: int = 0
    """Seed of the random detector's permutation."""

    def __post_init__(self) -> None:
        _choice("method", self.method, METHODS)
        _choice("norm", self.norm, NORMS)
        _choice("detector", self.detector, DETECTORS)
        _choice("singleton_fallback", self.singleton_fallback, SINGLETON_FALLBACKS)
        _finite_in("gamma", self.gamma, 0.0, 1.0, "in (0, 1]", low_open=True)
        _finite_in("lambda0", self.lambda0, 0.0, 1.0, "in [0, 1]")
        _finite_in("alpha_c", self.alpha_c, 0.0, 1.0, "in [0, 1]")
        _finite_in("alpha_lambda", self.alpha_lambda, 0.0, math.inf, ">= 0")
        _finite_in("beta_lambda", self.beta_lambda, 0.0, math.inf, ">= 0")
        _finite_in("step_weight", self.step_weight, 0.0, math.inf, ">= 0")
        _finite_in("eps", self.eps, 0.0, math.inf, "> 0", low_open=True)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"AdvantageConfig.seed must be an int, got {self.seed!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "AdvantageConfig":
        """Build from a mapping (e.g. a Hydra node), rejecting unknown keys by name."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown AdvantageConfig field(s) {unknown}; known: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _choice(field: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"AdvantageConfig.{field} must be one of {list(allowed)}, got {value!r}")


def _finite_in(
    field: str, value: object, low: float, high: float, allowed: str, low_open: bool = False
) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"AdvantageConfig.{field} must be a number {allowed}, got {value!r}")
    too_low = value <= low if low_open else value < low
    if math.isnan(value) or too_low or value > high or math.isinf(value):
        raise ValueError(f"AdvantageConfig.{field} must be {allowed}, got {value!r}")
