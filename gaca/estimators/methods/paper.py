"""The paper's estimators (GRPO, GiGPO, GACA), detectors and group normalisations, each registered with its spec.

An estimator is its function and its ``EstimatorSpec`` in one place: the ``ESTIMATORS.register``
decorator over the function, the spec naming its plain-loop reference (``gaca.estimators.reference``).
``gaca.estimators.registry`` imports this module on the first lookup, so it must not import torch:
the estimators take their vectorized building blocks (``gaca.estimators.core``) when first called,
and the detectors and normalisations, all torch, are declared by import path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gaca.estimators.reference import (
    entropy_scores,
    gaca_reference,
    gigpo_reference,
    grpo_reference,
    loo_scores,
)
from gaca.estimators.registry import (
    DETECTORS,
    ESTIMATORS,
    EVERY_ESTIMATOR_READS,
    GATE_READS,
    NORMALIZERS,
    STEP_LEVEL_READS,
    DetectorSpec,
    EstimatorSpec,
)

if TYPE_CHECKING:
    from gaca.estimators.batch import StepBatch
    from gaca.estimators.config import AdvantageConfig, Conventions
    from gaca.estimators.core import AdvantageOutput


# verl's own ``grpo`` keeps its name there: the paper's episode-level GRPO over step rows is ``gaca_grpo``.
@ESTIMATORS.register(
    "grpo",
    spec=EstimatorSpec(
        EVERY_ESTIMATOR_READS,
        needs_anchors=False,
        verl_name="gaca_grpo",
        label="GRPO",
        color="#7f7f7f",
        claimed_rank=0,
        reference=grpo_reference,
    ),
)
def grpo(batch: StepBatch, config: AdvantageConfig, rules: Conventions) -> AdvantageOutput:
    """A_t = A^E (episode level only, Eq. 2); tensors [N]."""
    from gaca.estimators import core

    episode = core.episode_advantage(batch, config, rules)
    return core.AdvantageOutput(advantages=episode, episode=episode, step_level=None)


@ESTIMATORS.register(
    "gigpo",
    spec=EstimatorSpec(
        EVERY_ESTIMATOR_READS + STEP_LEVEL_READS,
        needs_anchors=True,
        verl_name="gigpo",
        label="GiGPO",
        color="#1f77b4",
        claimed_rank=1,
        reference=gigpo_reference,
    ),
)
def gigpo(batch: StepBatch, config: AdvantageConfig, rules: Conventions) -> AdvantageOutput:
    """A_t = A^E + w A^S (GiGPO's fixed two-level sum, Eqs. 2-3); tensors [N]."""
    from gaca.estimators import core

    episode = core.episode_advantage(batch, config, rules)
    step_level, shared = core.step_advantage(batch, core.step_returns(batch, config, rules), config, rules)
    return core.AdvantageOutput(
        advantages=episode + config.step_weight * step_level,
        episode=episode,
        step_level=step_level,
        diagnostics={"nonsingleton_frac": core.mean(shared)},
    )


@ESTIMATORS.register(
    "gaca",
    spec=EstimatorSpec(
        EVERY_ESTIMATOR_READS + STEP_LEVEL_READS + GATE_READS,
        needs_anchors=True,
        gated=True,
        verl_name="gaca",
        label="GACA",
        color="#d62728",
        claimed_rank=2,
        reference=gaca_reference,
    ),
)
def gaca(batch: StepBatch, config: AdvantageConfig, rules: Conventions) -> AdvantageOutput:
    """A_t = lambda_t w A^S + (1 - lambda_t) A^E with lambda_t = gate(c_t) (Eqs. 5-8); tensors [N].

    Both levels follow ``rules``; the detector sees the same step returns g_t (its D_t), the gate
    is the same under every convention.
    """
    from gaca.estimators import core
    from gaca.estimators.gate import gate_weight

    episode = core.episode_advantage(batch, config, rules)
    step_return = core.step_returns(batch, config, rules)
    step_level, shared = core.step_advantage(batch, step_return, config, rules)
    criticality = DETECTORS.get(config.detector)(batch, step_return, config)
    lam = gate_weight(criticality, config.lambda0, config.alpha_lambda, config.beta_lambda)
    advantages = lam * config.step_weight * step_level + (1.0 - lam) * episode
    diagnostics = {
        "criticality_std": core.std(criticality),
        "lambda_mean": core.mean(lam),
        "lambda_std": core.std(lam),
        "clamp_frac": core.mean((lam <= 0.0) | (lam >= 1.0)),
        "nonsingleton_frac": core.mean(shared),
    }
    return core.AdvantageOutput(advantages, episode, step_level, lam, criticality, diagnostics)


DETECTORS.declare(
    "entropy",
    "gaca.estimators.detectors:entropy_detector",
    DetectorSpec(("alpha_c",), needs_nll=True, label="entropy (GACA)", reference=entropy_scores),
)
DETECTORS.declare(
    "uniform",
    "gaca.estimators.detectors:uniform_detector",
    DetectorSpec(constant=True, label="uniform (c = 1)", latex=r"uniform ($c \equiv 1$)"),
)
DETECTORS.declare(
    "random",
    "gaca.estimators.detectors:random_detector",
    DetectorSpec(
        ("alpha_c", "seed"),
        needs_nll=True,
        label="random (permuted entropy)",
        no_reference="a random permutation: checked through its properties (per-trajectory multiset, seed "
        "reproducibility) in tests/estimators/test_equivalence.py",
    ),
)
DETECTORS.declare(
    "loo",
    "gaca.estimators.detectors:leave_one_out_detector",
    DetectorSpec(("alpha_c",), needs_nll=True, label="leave-one-out (debiased)", reference=loo_scores),
)

NORMALIZERS.declare("mean_std", "gaca.estimators.segments:normalize_mean_std")
NORMALIZERS.declare("mean", "gaca.estimators.segments:normalize_mean")
