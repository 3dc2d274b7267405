"""The experiment grid, declared once: which configurations form each table cell.

A cell is a configuration, not a ``gaca.block`` tag: every FINISHED run whose estimator config is
equivalent to the cell's (``canonical_config``), in the cell's environment and scale, fills it, no
matter which sweep launched it. Sweeps import ``BLOCKS`` to know what to run; the report imports it
to know what to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

SEEDS = (0, 1, 2)
"""The seeds the sweeps run unless told otherwise (``gaca sweep BLOCK seed=0,1,2,3,4`` runs more).
The report never assumes this count: a cell's seeds, n, intervals and power follow the runs found
(``Plan.expected_seeds``)."""

DEFAULT_CONFIG: Mapping[str, object] = {
    "algorithm.method": "gaca",
    "algorithm.detector": "entropy",
    "algorithm.lambda0": 0.5,
    "algorithm.alpha_lambda": 0.5,
    "algorithm.beta_lambda": 0.5,
    "algorithm.alpha_c": 1.0,
    "algorithm.norm": "mean_std",
    "algorithm.singleton_fallback": "prompt_group",
    "algorithm.step_weight": 1.0,
    "algorithm.gamma": 0.95,
    "algorithm.conventions": "spec",
}
"""GACA's defaults (ESTIMATOR-SPEC.md); every variant below overrides only what its block varies."""

ENVIRONMENTS = ("household", "shop")
SCALES = ("tiny", "small")
ABLATION_ENVIRONMENT = "errand"
ABLATION_SCALE = "tiny"
"""The ablations run on ALFWorld at 1.5B in the paper; here on the errand testbed (docs/testbed.md). The report reads them
where most of their runs are (``cells.ablation_setting``: the sweeps run in the training config's
default environment) and falls back to this setting when there are none."""

PROTOCOL_KEYS = ("trainer.preset", "trainer.iterations", "env.difficulty")
"""Training-protocol params that must agree among the runs compared in one setting."""

METHOD_KEYS: Mapping[str, tuple[str, ...]] = {
    "grpo": ("algorithm.norm", "algorithm.conventions"),
    "gigpo": (
        "algorithm.norm", "algorithm.gamma", "algorithm.step_weight", "algorithm.singleton_fallback",
        "algorithm.conventions",
    ),
    "gaca": (
        "algorithm.norm",
        "algorithm.conventions",
        "algorithm.gamma",
        "algorithm.step_weight",
        "algorithm.singleton_fallback",
        "algorithm.detector",
        "algorithm.lambda0",
        "algorithm.alpha_lambda",
        "algorithm.beta_lambda",
        "algorithm.alpha_c",
    ),
}
"""The estimator params each method reads; the others (e.g. GRPO's lambda0) do not change the run."""

NUMERIC_KEYS = frozenset(
    {
        "algorithm.gamma",
        "algorithm.step_weight",
        "algorithm.lambda0",
        "algorithm.alpha_lambda",
        "algorithm.beta_lambda",
        "algorithm.alpha_c",
    }
)

ENVIRONMENT_LABELS = {
    "household": "Household (ALFWorld analogue)",
    "shop": "Shop (WebShop analogue)",
    "errand": "Errand (credit-assignment testbed)",
}
SCALE_LABELS = {"tiny": "tiny (1.5B analogue)", "small": "small (7B analogue)"}
METHOD_LABELS = {"grpo": "GRPO", "gigpo": "GiGPO", "gaca": "GACA"}
METHODS = ("grpo", "gigpo", "gaca")

ConfigKey = tuple[tuple[str, object], ...]


def canonical_config(config: Mapping[str, object]) -> ConfigKey:
    """The estimator a config actually runs, as a hashable key; equal keys are one cell.

    Only the params the method reads count. The fixed-weight estimator has several spellings that
    give identical advantages (ESTIMATOR-SPEC.md, special cases): ``detector=uniform``, or
    ``alpha_lambda = beta_lambda = 0`` with any detector. They share one key (detector uniform,
    no modulation, alpha_c dropped since c = 1 ignores it), so the uniform control, the lambda0 = 0.5
    sweep entry and the modulation-off entry are one result, as in the paper.

    Raises ``KeyError`` naming the first param the config lacks.
    """
    method = config["algorithm.method"]
    if method not in METHOD_KEYS:
        raise KeyError(f"algorithm.method={method!r} (known: {', '.join(METHOD_KEYS)})")
    values: dict[str, object] = {"algorithm.method": method}
    for key in METHOD_KEYS[method]:
        if key not in config or config[key] is None:
            raise KeyError(key)
        values[key] = round(float(config[key]), 9) if key in NUMERIC_KEYS else str(config[key])
    if method == "gaca":
        fixed_weight = values["algorithm.detector"] == "uniform" or (
            values["algorithm.alpha_lambda"] == 0.0 and values["algorithm.beta_lambda"] == 0.0
        )
        if fixed_weight:
            values.update(
                {"algorithm.detector": "uniform", "algorithm.alpha_lambda": 0.0, "algorithm.beta_lambda": 0.0}
            )
            del values["algorithm.alpha_c"]
    return tuple(sorted(values.items()))


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
