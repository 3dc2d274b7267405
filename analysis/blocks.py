"""The report's rows: which configurations form each table cell, and how they are labelled.

A cell is a configuration, not a ``gaca.block`` tag: every FINISHED run whose estimator config is
equivalent to the cell's (``canonical_config``, the rule of ``gaca.contract.canonical``), in the
cell's environment and scale and the setting shared by the rest of the table, fills it, no matter
which sweep launched it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from gaca.contract import SEEDS, canonical, normalize
from gaca.estimators.config import AdvantageConfig
from gaca.estimators.registry import read_fields

DEFAULT_CONFIG: Mapping[str, object] = {f"algorithm.{key}": value for key, value in AdvantageConfig().to_dict().items()}
"""GACA's defaults (``AdvantageConfig``, ESTIMATOR-SPEC.md); every variant below overrides only what its block varies."""

ENVIRONMENTS = ("household", "shop")
SCALES = ("tiny", "small")
ABLATION_ENVIRONMENT = "errand"
ABLATION_SCALE = "tiny"
"""The ablations run on ALFWorld at 1.5B in the paper; here on the errand testbed (docs/testbed.md). The report reads them
where most of their runs are (``cells.ablation_setting``: the sweeps run in the training config's
default environment) and falls back to this setting when there are none."""

PRESET_KEY = "trainer.preset"
"""The trainer preset's name: not part of a run's identity, but what ``gaca report --preset`` selects by."""

ENVIRONMENT_LABELS = {
    "household": "Household (ALFWorld analogue)",
    "shop": "Shop (WebShop analogue)",
    "errand": "Errand (credit-assignment testbed)",
}
SCALE_LABELS = {"tiny": "tiny (1.5B analogue)", "small": "small (7B analogue)"}
METHOD_LABELS = {"grpo": "GRPO", "gigpo": "GiGPO", "gaca": "GACA"}
METHODS = ("grpo", "gigpo", "gaca")

ConfigKey = tuple[tuple[str, object], ...]


def unflatten(config: Mapping[str, object]) -> dict[str, Any]:
    """``{"trainer.lr": 0.001}`` (a run's logged params) -> ``{"trainer": {"lr": 0.001}}``."""
    nested: dict[str, Any] = {}
    for key, value in config.items():
        *parents, leaf = key.split(".")
        node = nested
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return nested


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value) if isinstance(value, (list, Mapping)) else value
    return flat


def identity(config: Mapping[str, object]) -> dict[str, object]:
    """``gaca.contract.canonical`` of a dotted config (a run's params), flattened again: what
    determines the run's result, every key of it. Raises ``KeyError`` naming the first param the
    estimator reads that the config lacks."""
    nested = unflatten(config)
    algorithm = nested.get("algorithm", {})
    if "method" not in algorithm:
        raise KeyError("algorithm.method")
    flat = _flat(normalize(canonical(nested)))
    for key in read_fields(algorithm):
        if f"algorithm.{key}" not in flat:
            raise KeyError(f"algorithm.{key}")
    return flat


def canonical_config(config: Mapping[str, object]) -> ConfigKey:
    """The estimator a config actually runs (the ``algorithm`` part of its ``identity``), as a
    hashable key; with the same env, scale and the rest of the identity, equal keys are one cell.

    Only the params the method reads count (its registry spec), and the fixed-weight estimator's
    spellings (``detector=uniform``, or ``alpha_lambda = beta_lambda = 0``) are one key: the uniform
    control, the lambda0 = 0.5 sweep entry and the modulation-off entry are one result, as in the paper.

    Raises ``KeyError`` naming the first param the config lacks.
    """
    return tuple(sorted((key, value) for key, value in identity(config).items() if key.startswith("algorithm.")))


def setting(config: Mapping[str, object]) -> dict[str, object]:
    """Everything in a config's ``identity`` but the estimator and the seed: what must be equal
    among the runs compared in one table (the environment, the model, the trainer)."""
    return {key: value for key, value in identity(config).items() if not key.startswith("algorithm.") and key != "seed"}


@dataclass(frozen=True)
class Variant:
    """One row of a block: a configuration given by how it differs from ``DEFAULT_CONFIG``."""

    name: str
    """Short id used in claims and file names, e.g. ``lambda0=0.25``."""
    label: str
    """Plain-text row label (claims.md, the printed summary)."""
    latex: str
    """LaTeX row label."""
    overrides: Mapping[str, object] = field(default_factory=dict)
    """Params that differ from ``DEFAULT_CONFIG``."""

    def config(self) -> dict[str, object]:
        return {**DEFAULT_CONFIG, **self.overrides}

    def key(self) -> ConfigKey:
        return canonical_config(self.config())


@dataclass(frozen=True)
class Block:
    """One ablation block (or the main comparison): rows that vary one design choice."""

    name: str
    """The ``gaca report`` argument and ``gaca.block`` tag, e.g. ``detector``."""
    title: str
    """LaTeX heading of the block in Table 2."""
    varies: tuple[str, ...]
    """Params this block varies (the rest stay at ``DEFAULT_CONFIG``)."""
    variants: tuple[Variant, ...]
    environments: tuple[str, ...] = (ABLATION_ENVIRONMENT,)
    scales: tuple[str, ...] = (ABLATION_SCALE,)
    seeds: tuple[int, ...] = SEEDS

    def variant(self, name: str) -> Variant:
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(f"block {self.name!r} has no variant {name!r}; known: {[v.name for v in self.variants]}")


DEFAULT_VARIANT = Variant("gaca", "GACA (adaptive gate)", "GACA (adaptive gate)")
"""The method with every default: the reference row of the ablations."""

MODULATION_OFF = {"algorithm.alpha_lambda": 0.0, "algorithm.beta_lambda": 0.0}


def _lambda0(value: float) -> Variant:
    return Variant(
        f"lambda0={value:g}",
        f"lambda0 = {value:g}",
        rf"$\lambda_0 = {value:g}$",
        {"algorithm.lambda0": value, **MODULATION_OFF},
    )


def _modulation(value: float) -> Variant:
    return Variant(
        f"modulation={value:g}",
        f"alpha_lambda = beta_lambda = {value:g}",
        rf"$\alpha_\lambda = \beta_\lambda = {value:g}$",
        {"algorithm.alpha_lambda": value, "algorithm.beta_lambda": value},
    )


def _alpha_c(value: float) -> Variant:
    return Variant(
        f"alpha_c={value:g}", f"alpha_c = {value:g}", rf"$\alpha_c = {value:g}$", {"algorithm.alpha_c": value}
    )


MAIN = Block(
    name="main",
    title="Main comparison",
    varies=("algorithm.method",),
    variants=tuple(
        Variant(method, METHOD_LABELS[method], METHOD_LABELS[method], {"algorithm.method": method})
        for method in METHODS
    ),
    environments=ENVIRONMENTS,
    scales=SCALES,
)

ABLATIONS = (
    Block(
        name="detector",
        title="Criticality detector",
        varies=("algorithm.detector",),
        variants=(
            Variant(
                "random", "random (permuted entropy)", "random (permuted entropy)", {"algorithm.detector": "random"}
            ),
            Variant("uniform", "uniform (c = 1)", r"uniform ($c \equiv 1$)", {"algorithm.detector": "uniform"}),
            Variant("entropy", "entropy (GACA)", "entropy (GACA)", {"algorithm.detector": "entropy"}),
        ),
    ),
    Block(
        name="lambda0",
        title=r"Fixed weight $\lambda_0$ (modulation off)",
        varies=("algorithm.lambda0", "algorithm.alpha_lambda", "algorithm.beta_lambda"),
        variants=(*(_lambda0(value) for value in (0.0, 0.25, 0.5, 0.75, 1.0)), DEFAULT_VARIANT),
    ),
    Block(
        name="modulation",
        title=r"Modulation $\alpha_\lambda = \beta_\lambda$",
        varies=("algorithm.alpha_lambda", "algorithm.beta_lambda"),
        variants=tuple(_modulation(value) for value in (0.0, 0.5, 1.0)),
    ),
    Block(
        name="alpha_c",
        title=r"Fused score weight $\alpha_c$",
        varies=("algorithm.alpha_c",),
        variants=tuple(_alpha_c(value) for value in (1.0, 0.7, 0.5)),
    ),
    Block(
        name="debias",
        title="Debiased score (App. B.4)",
        varies=("algorithm.detector",),
        variants=(
            Variant("entropy", "entropy (GACA)", "entropy (GACA)", {"algorithm.detector": "entropy"}),
            Variant("loo", "leave-one-out (debiased)", "leave-one-out (debiased)", {"algorithm.detector": "loo"}),
        ),
    ),
)

BLOCKS: Mapping[str, Block] = {block.name: block for block in (MAIN, *ABLATIONS)}


def get_block(name: str) -> Block:
    try:
        return BLOCKS[name]
    except KeyError:
        raise ValueError(f"unknown block {name!r}; known: {', '.join(BLOCKS)}") from None


def environment_label(env: str) -> str:
    return ENVIRONMENT_LABELS.get(env, env)


def scale_label(scale: str) -> str:
    return SCALE_LABELS.get(scale, scale)
