"""The estimator's configuration: one frozen dataclass, validated once at the boundary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from gaca.estimators.registry import DETECTORS, ESTIMATORS, NORMALIZERS
from gaca.validation import check_choice, check_number, reject_unknown

SINGLETON_FALLBACKS = ("prompt_group", "zero")


@dataclass(frozen=True)
class Conventions:
    """The choices of docs/estimator.md, "Conventions", and how padding copies count, each as a switch
    (True = verl-agent's)."""

    penalty_at_step: bool
    """The invalid-action penalty is taken out of the discounting and the episode sum and subtracted
    once, at its own row, from the step return and from that row's episode score."""
    episode_over_rows: bool
    """The episode score's group mean and std are taken over all step rows of the group."""
    one_element_raw: bool
    """A one-element set at the episode level gets mean 0 and std 1 (the raw score), not advantage 0."""
    singleton_zero: bool
    """A step alone in its anchor group gets A^S = 0 (whatever ``singleton_fallback`` says)."""
    copies_count: bool = False
    """Padding copies of a row (``copies`` in ``compute_advantages``: a trainer's batch padding)
    count in the row-level group statistics as the rows they repeat; otherwise each step once."""


CONVENTIONS: dict[str, Conventions] = {
    "spec": Conventions(penalty_at_step=False, episode_over_rows=False, one_element_raw=False, singleton_zero=False),
    "verl_agent": Conventions(
        penalty_at_step=True, episode_over_rows=True, one_element_raw=True, singleton_zero=True, copies_count=True
    ),
}
"""``AdvantageConfig.conventions`` -> its switches. ``verl_agent``: verl-agent's GiGPO code (gigpo/core_gigpo.py
and its trainer's invalid-action penalty), which produced the paper's baselines."""


@dataclass(frozen=True)
class AdvantageConfig:
    """Options of the advantage estimators (docs/estimator.md; paper Eqs. 2-8).

    Defaults are the spec's. Every field is checked in ``__post_init__``; a bad value raises
    ``ValueError`` naming the key (``algorithm.lambda0``) and what it may be.
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
    conventions: str = "spec"
    """spec: docs/estimator.md as written; verl_agent: verl-agent's episode normalisation over step rows,
    its penalty at the step, its one-element groups (and singleton anchors at 0), for every method.
    verl_agent needs the per-row ``invalid`` flags and ``invalid_penalty`` in ``compute_advantages``."""

    def __post_init__(self) -> None:
        check_choice("algorithm.method", self.method, ESTIMATORS)
        check_choice("algorithm.norm", self.norm, NORMALIZERS)
        check_choice("algorithm.detector", self.detector, DETECTORS)
        check_choice("algorithm.singleton_fallback", self.singleton_fallback, SINGLETON_FALLBACKS)
        check_choice("algorithm.conventions", self.conventions, tuple(CONVENTIONS))
        check_number("algorithm.gamma", self.gamma, 0.0, 1.0, "in (0, 1]", low_open=True)
        check_number("algorithm.lambda0", self.lambda0, 0.0, 1.0, "in [0, 1]")
        check_number("algorithm.alpha_c", self.alpha_c, 0.0, 1.0, "in [0, 1]")
        for key in ("alpha_lambda", "beta_lambda", "step_weight"):
            check_number(f"algorithm.{key}", getattr(self, key), 0.0, float("inf"), ">= 0")
        check_number("algorithm.eps", self.eps, 0.0, float("inf"), "> 0", low_open=True)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"algorithm.seed must be an int, got {self.seed!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> AdvantageConfig:
        """Build from a mapping (e.g. a Hydra node), rejecting unknown keys by name."""
        reject_unknown("algorithm", values, [field.name for field in fields(cls)])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def rules(self) -> Conventions:
        """The switches of ``conventions``; ``singleton_fallback='zero'`` turns on ``singleton_zero`` too."""
        rules = CONVENTIONS[self.conventions]
        return replace(rules, singleton_zero=rules.singleton_zero or self.singleton_fallback == "zero")

    def reseeded(self, *keys: int) -> AdvantageConfig:
        """This config with the random detector's seed derived from ``seed`` and ``keys`` (e.g. the
        training step), so that every update draws a fresh, reproducible permutation."""
        state = np.random.SeedSequence([self.seed, *keys]).generate_state(1)[0]
        return replace(self, seed=int(state))
