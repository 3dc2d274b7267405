"""The estimators and criticality detectors by name, each with its spec (importable without torch).

A spec says which ``AdvantageConfig`` fields an entry reads, which inputs it needs, whether it is
gated, how the report names and colours it, and where its plain-loop reference is. Config
validation (``AdvantageConfig``), the estimator's input checks (``compute_advantages``), run identity
(``gaca.contract.canonical``), the CPU trainer (the criticality histogram of a gated run), the
reference (``gaca.estimators.reference``) and the analysis (labels, colours, Table 7, the claimed
order) read the specs; nothing keeps its own list or compares names.

The built-in entries are declared here by import path, so that reading a spec never imports torch.
A new estimator is one registered function with its spec (in a plugin module, see ``gaca.registry``),
its ``algorithm/NAME.yaml`` and its loop reference, nothing else::

    @ESTIMATORS.register("mine", spec=EstimatorSpec(EVERY_ESTIMATOR_READS, needs_anchors=False,
                                                    reference="my_package:mine_reference"))
    def mine(batch, config, rules): ...  # -> AdvantageOutput

    @DETECTORS.register("surprise", spec=DetectorSpec(reads=("alpha_c",), needs_nll=True))
    def surprise(batch, step_return, config): ...  # -> c [N]
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gaca.registry import Registry

EVERY_ESTIMATOR_READS = ("norm", "eps", "conventions")
"""The group normalisation and the conventions shape every estimator's episode level (Eq. 2)."""
STEP_LEVEL_READS = ("gamma", "step_weight", "singleton_fallback")
"""Fields of the step level A^S (Eq. 3) and its weight w."""
GATE_READS = ("lambda0", "alpha_lambda", "beta_lambda", "detector")
"""Fields of the gate (Eq. 7); the detector adds its own reads."""


@dataclass(frozen=True)
class EstimatorSpec:
    """What an advantage estimator ``(StepBatch, AdvantageConfig, Conventions) -> AdvantageOutput``
    reads and needs, and how the report shows it."""

    reads: tuple[str, ...]
    """``AdvantageConfig`` fields its advantages depend on (``method`` aside); the others do not change a run."""
    needs_anchors: bool
    """Whether ``compute_advantages`` must be given the anchor observations (step-level groups)."""
    gated: bool = False
    """Whether it runs ``config.detector`` and a gate: the detector's reads and needs then count as its
    own, and its runs log the gate diagnostics and the criticality histogram (the report's Table 7
    and criticality figures)."""
    verl_name: str | None = None
    """Its ``algorithm.adv_estimator`` name in verl (``gaca.backends.verl``); None: not offered to verl."""
    label: str | None = None
    """Its name in tables and figure legends; None: the registered name."""
    color: str | None = None
    """Its colour in figures (a matplotlib colour); None: one of ``FALLBACK_COLORS``, fixed by its name."""
    claimed_rank: int | None = None
    """Its place in the paper's claimed order of Table 1 (GRPO 0 < GiGPO 1 < GACA 2), which the
    report checks; None: not part of the claim."""
    reference: str | None = None
    """``"package.module:function"`` of its plain-loop reference (``gaca.estimators.reference``):
    ``(ReferenceLevels, AdvantageConfig) -> per-row lists``, the oracle of its property tests."""


@dataclass(frozen=True)
class DetectorSpec:
    """What a criticality detector ``(StepBatch, step_return, AdvantageConfig) -> c [N]`` reads, and
    how the report shows it."""

    reads: tuple[str, ...] = ()
    """``AdvantageConfig`` fields its c depends on (``seed`` for a random one)."""
    needs_nll: bool = False
    """Whether it needs the step NLLs H_t."""
    constant: bool = False
    """c = 1 for every step: the gate is then lambda0 everywhere (the fixed two-level estimator)."""
    label: str | None = None
    """Its plain-text row label; None: the registered name."""
    latex: str | None = None
    """Its LaTeX row label; None: ``label``."""
    reference: str | None = None
    """``"package.module:function"`` of its plain-loop reference: ``(ReferenceLevels) -> [N]`` the
    per-step score that Eq. 6 fuses in place of H_t; None for a constant detector and for one the
    reference cannot follow (``random``: its permutation is checked through its properties)."""


FALLBACK_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
"""Figure colours of the estimators whose spec names none, one per name (a hash of it, so that a
name keeps its colour from figure to figure)."""

ESTIMATORS: Registry = Registry("method")
"""``algorithm.method`` -> the estimator function, with its ``EstimatorSpec``."""
DETECTORS: Registry = Registry("detector")
"""``algorithm.detector`` -> the detector function, with its ``DetectorSpec``."""

# verl's own ``grpo`` keeps its name there: the paper's episode-level GRPO over step rows is ``gaca_grpo``.
ESTIMATORS.declare(
    "grpo",
    "gaca.estimators.core:grpo",
    EstimatorSpec(
        EVERY_ESTIMATOR_READS,
        needs_anchors=False,
        verl_name="gaca_grpo",
        label="GRPO",
        color="#7f7f7f",
        claimed_rank=0,
        reference="gaca.estimators.reference:grpo_reference",
    ),
)
ESTIMATORS.declare(
    "gigpo",
    "gaca.estimators.core:gigpo",
    EstimatorSpec(
        EVERY_ESTIMATOR_READS + STEP_LEVEL_READS,
        needs_anchors=True,
        verl_name="gigpo",
        label="GiGPO",
        color="#1f77b4",
        claimed_rank=1,
        reference="gaca.estimators.reference:gigpo_reference",
    ),
)
ESTIMATORS.declare(
    "gaca",
    "gaca.estimators.core:gaca",
    EstimatorSpec(
        EVERY_ESTIMATOR_READS + STEP_LEVEL_READS + GATE_READS,
        needs_anchors=True,
        gated=True,
        verl_name="gaca",
        label="GACA",
        color="#d62728",
        claimed_rank=2,
        reference="gaca.estimators.reference:gaca_reference",
    ),
)
DETECTORS.declare(
    "entropy",
    "gaca.estimators.detectors:entropy_detector",
    DetectorSpec(
        ("alpha_c",), needs_nll=True, label="entropy (GACA)", reference="gaca.estimators.reference:entropy_scores"
    ),
)
DETECTORS.declare(
    "uniform",
    "gaca.estimators.detectors:uniform_detector",
    DetectorSpec(constant=True, label="uniform (c = 1)", latex=r"uniform ($c \equiv 1$)"),
)
DETECTORS.declare(
    "random",
    "gaca.estimators.detectors:random_detector",
    DetectorSpec(("alpha_c", "seed"), needs_nll=True, label="random (permuted entropy)"),
)
DETECTORS.declare(
    "loo",
    "gaca.estimators.detectors:leave_one_out_detector",
    DetectorSpec(
        ("alpha_c",), needs_nll=True, label="leave-one-out (debiased)", reference="gaca.estimators.reference:loo_scores"
    ),
)

NORMALIZERS: Registry = Registry("norm")
"""``algorithm.norm`` -> the group normalisation
``(values, segment, num_segments, eps, one_element_raw, weight) -> [N]``."""
NORMALIZERS.declare("mean_std", "gaca.estimators.segments:normalize_mean_std")
NORMALIZERS.declare("mean", "gaca.estimators.segments:normalize_mean")

CONSTANT_GATE: Mapping[str, Any] = {"detector": "uniform", "alpha_lambda": 0.0, "beta_lambda": 0.0, "alpha_c": 1.0}
"""The one spelling of a gate that is lambda0 everywhere (docs/estimator.md, identities): a constant
detector, or the modulation off (alpha_lambda = beta_lambda = 0) with any detector."""


def needs_nll(algorithm: Mapping[str, Any]) -> bool:
    """Whether the estimator of ``algorithm`` (a mapping of ``AdvantageConfig`` fields) reads H_t."""
    spec: EstimatorSpec = ESTIMATORS.spec(algorithm["method"])
    return spec.gated and DETECTORS.spec(algorithm["detector"]).needs_nll


def verl_names() -> dict[str, str]:
    """``algorithm.method`` -> its ``algorithm.adv_estimator`` name in verl, for every estimator verl is offered."""
    specs = {method: ESTIMATORS.spec(method) for method in ESTIMATORS}
    return {method: spec.verl_name for method, spec in specs.items() if spec.verl_name}


def constant_gate(algorithm: Mapping[str, Any]) -> bool:
    """Whether the gate of ``algorithm`` is lambda0 everywhere: a constant detector, or no modulation."""
    detector: DetectorSpec = DETECTORS.spec(algorithm["detector"])
    return detector.constant or algorithm.get("alpha_lambda") == algorithm.get("beta_lambda") == 0


def read_fields(algorithm: Mapping[str, Any]) -> list[str]:
    """The ``AdvantageConfig`` fields that the estimator of ``algorithm`` reads, ``method`` first."""
    spec: EstimatorSpec = ESTIMATORS.spec(algorithm["method"])
    fields = ["method", *spec.reads]
    if spec.gated:
        gate = CONSTANT_GATE if constant_gate(algorithm) else DETECTORS.spec(algorithm["detector"]).reads
        fields += [field for field in gate if field not in fields]
    return fields


def reads(algorithm: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``algorithm`` that its estimator reads (``read_fields``), in one spelling.

    A gate that is lambda0 everywhere reads ``CONSTANT_GATE`` whatever its detector and
    modulation, so that the uniform control, the lambda0 = 0.5 sweep entry and "modulation 0" are
    one configuration. Fields absent from ``algorithm`` stay absent.
    """
    values = dict(algorithm)
    if ESTIMATORS.spec(algorithm["method"]).gated and constant_gate(algorithm):
        values.update(CONSTANT_GATE)
    return {field: values[field] for field in read_fields(algorithm) if field in values}


def estimator_label(method: str) -> str:
    """The table and legend name of ``method`` (its spec's ``label``, else the name itself)."""
    return ESTIMATORS.spec(method).label or method


def estimator_color(method: str) -> str:
    """The figure colour of ``method``: its spec's ``color``, else one of ``FALLBACK_COLORS`` fixed by its name."""
    color = ESTIMATORS.spec(method).color
    if color:
        return color
    return FALLBACK_COLORS[int(hashlib.sha256(method.encode()).hexdigest(), 16) % len(FALLBACK_COLORS)]


def detector_labels(detector: str) -> tuple[str, str]:
    """(plain-text, LaTeX) row labels of ``detector`` (its spec's ``label`` and ``latex``, else its name)."""
    spec: DetectorSpec = DETECTORS.spec(detector)
    label = spec.label or detector
    return label, spec.latex or label


def claimed_order() -> list[str]:
    """The estimators of the paper's claimed order, lowest first (``EstimatorSpec.claimed_rank``)."""
    ranked = {method: ESTIMATORS.spec(method).claimed_rank for method in ESTIMATORS.in_order()}
    return sorted((method for method, rank in ranked.items() if rank is not None), key=lambda method: ranked[method])
