"""The estimators and criticality detectors by name, each with its spec (importable without torch).

A spec says which ``AdvantageConfig`` fields an entry reads, which inputs it needs, whether it is
gated, how the report names and colours it, and where its plain-loop reference is. Config
validation (``AdvantageConfig``), the estimator's input checks (``compute_advantages``), run identity
(``gaca.contract.canonical``), the CPU trainer (the criticality histogram of a gated run), the
reference (``gaca.estimators.reference``) and the analysis (labels, colours, Table 7, the claimed
order) read the specs; nothing keeps its own list or compares names.

The built-in entries are registered in ``gaca.estimators.methods`` (each estimator beside its spec),
imported on the first lookup; neither it nor this module imports torch, so reading a spec or
validating a config never does. A new estimator is one registered function with its spec (in
``gaca.estimators.methods`` or a plugin module, see ``gaca.registry``), its ``algorithm/NAME.yaml``
and its loop reference, nothing else (docs/extending.md)::

    @ESTIMATORS.register("mine", spec=EstimatorSpec(EVERY_ESTIMATOR_READS, needs_anchors=False,
                                                    reference=mine_reference))
    def mine(batch, config, rules): ...  # -> AdvantageOutput

    @DETECTORS.register("surprise", spec=DetectorSpec(reads=("alpha_c",), needs_nll=True,
                                                      no_reference="checked through its properties"))
    def surprise(batch, step_return, config): ...  # -> c [N]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
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
    reference: Callable[..., dict[str, list[float] | None]] | None = None
    """Its plain-loop reference (``gaca.estimators.reference``): ``(ReferenceLevels, AdvantageConfig) ->
    per-row lists``, the oracle of its property tests (tests/estimators/test_equivalence.py)."""
    no_reference: str | None = None
    """Why it has no reference (then its property tests must check it otherwise); None: it has one."""


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
    reference: Callable[..., list[float]] | None = None
    """Its plain-loop reference: ``(ReferenceLevels) -> [N]`` the per-step score that Eq. 6 fuses in
    place of H_t; None for a constant detector and for one the reference cannot follow."""
    no_reference: str | None = None
    """Why a detector that is not constant has no reference (``random``: its permutation is checked
    through its properties); None: it has one, or is constant."""


FALLBACK_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
"""Figure colours of the estimators whose spec names none, one per name (a hash of it, so that a
name keeps its colour from figure to figure)."""

HOME = "gaca.estimators.methods"
"""The module that registers the built-in estimators, detectors and normalisations."""

ESTIMATORS: Registry = Registry("method", home=HOME)
"""``algorithm.method`` -> the estimator function, with its ``EstimatorSpec``."""
DETECTORS: Registry = Registry("detector", home=HOME)
"""``algorithm.detector`` -> the detector function, with its ``DetectorSpec``."""

NORMALIZERS: Registry = Registry("norm", home=HOME)
"""``algorithm.norm`` -> the group normalisation
``(values, segment, num_segments, eps, one_element_raw, weight) -> [N]``."""

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
