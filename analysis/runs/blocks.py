"""The report's blocks: the sweep files of ``sweeps/``, expanded by the orchestration and composed
as their jobs compose them; this module adds only how their rows are named, labelled and ordered.

A cell is a configuration, not a ``gaca.block`` tag: every FINISHED run whose estimator config is
equivalent to the cell's (``canonical_config``, the rule of ``gaca.contract.canonical``), in the
cell's environment and scale and the setting shared by the rest of the table, fills it, no matter
which sweep launched it. The ablations run on ALFWorld at 1.5B in the paper; here where their sweep
files run them (the errand testbed at the tiny scale, docs/testbed.md), and the report reads them
where most of their runs are (``cells.ablation_setting``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from gaca.contract import canonical, flatten, normalize, parse_param, unflatten
from gaca.estimators.config import AdvantageConfig
from gaca.estimators.registry import ESTIMATORS, claimed_order, detector_labels, estimator_label, read_fields

if TYPE_CHECKING:
    from gaca.compose import blocks as block_files

DEFAULT_CONFIG: Mapping[str, object] = {f"algorithm.{key}": value for key, value in AdvantageConfig().to_dict().items()}
"""GACA's defaults (``AdvantageConfig``, docs/estimator.md): what a variant's ``overrides`` differ from."""

PRESET_KEY = "trainer.preset"
"""The trainer preset's name: not part of a run's identity, but what ``gaca report --preset`` selects by."""

ENVIRONMENT_LABELS = {
    "household": "Household (ALFWorld analogue)",
    "shop": "Shop (WebShop analogue)",
    "errand": "Errand (credit-assignment testbed)",
}
SCALE_LABELS = {"tiny": "tiny (1.5B analogue)", "small": "small (7B analogue)"}

ConfigKey = tuple[tuple[str, object], ...]


def _parsed(config: Mapping[str, Any]) -> dict[str, object]:
    """``config`` as its run's params read back: dotted keys, numbers as numbers, lists as their text."""
    return {key: parse_param(value) for key, value in flatten(config).items()}


def identity(config: Mapping[str, object]) -> dict[str, object]:
    """``gaca.contract.canonical`` of a dotted config (a run's params), flattened again: what
    determines the run's result, every key of it. Raises ``KeyError`` naming the first param the
    estimator reads that the config lacks."""
    nested = unflatten(config)
    algorithm = nested.get("algorithm", {})
    if "method" not in algorithm:
        raise KeyError("algorithm.method")
    flat = _parsed(normalize(canonical(nested)))
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


def number(config: Mapping[str, object], key: str) -> float:
    """The numeric param ``key`` of a dotted config (a number, or its text); raises ``TypeError`` otherwise."""
    value = config[key]
    if not isinstance(value, (int, float, str)):
        raise TypeError(f"{key} is {value!r}, not a number")
    return float(value)


def setting(config: Mapping[str, object]) -> dict[str, object]:
    """Everything in a config's ``identity`` but the estimator and the seed: what must be equal
    among the runs compared in one table (the environment, the model, the trainer)."""
    return {key: value for key, value in identity(config).items() if not key.startswith("algorithm.") and key != "seed"}


@dataclass(frozen=True)
class Variant:
    """One row of a block: a configuration given by how its estimator differs from ``DEFAULT_CONFIG``."""

    name: str
    """Short id used in claims and file names, e.g. ``lambda0=0.25``."""
    label: str
    """Plain-text row label (claims.md, the printed summary)."""
    latex: str
    """LaTeX row label."""
    overrides: Mapping[str, object] = field(default_factory=dict)
    """Estimator params that differ from ``DEFAULT_CONFIG``."""

    def config(self) -> dict[str, object]:
        return {**DEFAULT_CONFIG, **self.overrides}

    def key(self) -> ConfigKey:
        return canonical_config(self.config())


@dataclass(frozen=True)
class Block:
    """One sweep block (the main comparison or an ablation): rows that vary one design choice."""

    name: str
    """The ``gaca report`` argument, the sweep file's name and the ``gaca.block`` tag, e.g. ``detector``."""
    title: str
    """LaTeX heading of the block in Table 2."""
    variants: tuple[Variant, ...]
    environments: tuple[str, ...]
    scales: tuple[str, ...]
    seeds: tuple[int, ...]
    """As the sweep file's grid runs them (``gaca sweep BLOCK seed=0,1,2,3,4`` runs more; the
    report's cells follow the runs found)."""

    def variant(self, name: str) -> Variant:
        """The row named ``name`` (names are unique in a block: ``_block`` disambiguates them)."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(f"block {self.name!r} has no variant {name!r}; known: {[v.name for v in self.variants]}")

    def at(self, overrides: Mapping[str, object] | None = None) -> Variant:
        """The row whose estimator is ``DEFAULT_CONFIG`` with ``overrides`` (dotted ``algorithm.*``
        keys), compared by ``canonical_config``: a row found by what it runs, not by its name or place.
        Raises ``KeyError`` when the block has no such row."""
        key = canonical_config({**DEFAULT_CONFIG, **(overrides or {})})
        for variant in self.variants:
            if variant.key() == key:
                return variant
        raise KeyError(f"block {self.name!r} has no row running {dict(overrides or {})!r} on the defaults")

    def default(self) -> Variant:
        """The adaptive default: the row whose estimator is ``AdvantageConfig()``'s (``DEFAULT_CONFIG``)."""
        return self.at()

    def estimator(self, method: str) -> Variant:
        """The row of estimator ``method`` with every other default (a column of Table 1)."""
        return self.at({"algorithm.method": method})

    def variant_of(self, config: Mapping[str, Any]) -> Variant | None:
        """The row whose estimator a composed (nested) run config runs, or None."""
        key = canonical_config(_parsed(config))
        return next((variant for variant in self.variants if variant.key() == key), None)


def default_key() -> ConfigKey:
    """``canonical_config`` of ``DEFAULT_CONFIG``: the adaptive default's estimator, the ablations' reference."""
    return canonical_config(DEFAULT_CONFIG)


def default_method() -> str:
    """The estimator of ``AdvantageConfig()`` (GACA in the paper)."""
    return str(DEFAULT_CONFIG["algorithm.method"])


def baseline_method() -> str:
    """The estimator just below the default's in ``claimed_order()`` (GiGPO in the paper): what
    Table 1's gain and the sample-efficiency target compare the default with."""
    order = claimed_order()
    position = order.index(default_method())
    if position == 0:
        raise ValueError(f"{default_method()!r} is the lowest of the claimed order {order}: it has no baseline")
    return order[position - 1]


# --- presentation: how each block's rows are named, labelled and ordered -------------------------
Label = tuple[str, str, str]
"""(row name, plain-text label, LaTeX label)."""

ADAPTIVE = ("gaca", "GACA (adaptive gate)", "GACA (adaptive gate)")
"""The method with every default: the reference row of the ablations."""


def methods() -> tuple[str, ...]:
    """Every registered estimator, the installed plugins' included, in the order of every table: the
    paper's GRPO, GiGPO and GACA, then the plugins' in the order they registered."""
    return tuple(ESTIMATORS.in_order())


def main_methods() -> tuple[str, ...]:
    """Table 1's estimators: those ``sweeps/main.yaml`` lists, in its order (not every registered one)."""
    return tuple(variant.name for variant in report_blocks().main.variants)


def _method(config: Mapping[str, object]) -> Label:
    method = str(config["algorithm.method"])
    return method, estimator_label(method), estimator_label(method)


def _detector(config: Mapping[str, object]) -> Label:
    detector = str(config["algorithm.detector"])
    return (detector, *detector_labels(detector))


def _lambda0(config: Mapping[str, object]) -> Label:
    if config["algorithm.alpha_lambda"] or config["algorithm.beta_lambda"]:
        return ADAPTIVE
    value = number(config, "algorithm.lambda0")
    return f"lambda0={value:g}", f"lambda0 = {value:g}", rf"$\lambda_0 = {value:g}$"


def _modulation(config: Mapping[str, object]) -> Label:
    value = number(config, "algorithm.alpha_lambda")
    return (
        f"modulation={value:g}",
        f"alpha_lambda = beta_lambda = {value:g}",
        rf"$\alpha_\lambda = \beta_\lambda = {value:g}$",
    )


def _alpha_c(config: Mapping[str, object]) -> Label:
    value = number(config, "algorithm.alpha_c")
    return f"alpha_c={value:g}", f"alpha_c = {value:g}", rf"$\alpha_c = {value:g}$"


@dataclass(frozen=True)
class Rows:
    """How a block's rows read: its heading, each row's label from its config, their order."""

    title: str
    label: Callable[[Mapping[str, object]], Label]
    order: tuple[str, ...] = ()
    """Row names shown first, in this order; the others follow in the sweep file's order."""


PRESENTATION: Mapping[str, Rows] = {
    "main": Rows("Main comparison", _method),
    "detector": Rows("Criticality detector", _detector, ("random", "uniform", "entropy")),
    "lambda0": Rows(r"Fixed weight $\lambda_0$ (modulation off)", _lambda0),
    "modulation": Rows(r"Modulation $\alpha_\lambda = \beta_\lambda$", _modulation),
    "alpha_c": Rows(r"Fused score weight $\alpha_c$", _alpha_c),
    "debias": Rows("Debiased score (App. B.4)", _detector),
}
"""The blocks the report shows (``main`` in Table 1, the others in Table 2), in table order. The
horizon block has its own figure (``analysis.render.horizon``). ``main`` has a row for each estimator
``sweeps/main.yaml`` lists, and one for an estimator the file does not list only where runs of it
at the block's setting are read (``gaca sweep main algorithm=grpo,gigpo,gaca,NAME``: ``run_beside``)."""
MAIN_BLOCK = "main"

SETTING_KEYS = ("seed", "env", "model")
"""Grid dimensions that say where a row runs (its seeds, environment and scale), not which row it is."""


def _expand(names: tuple[str, ...], beside: tuple[str, ...] = ()) -> dict[str, Block]:
    """The blocks ``names`` from their sweep files: every grid point expanded by the orchestration
    (``gaca.compose.blocks.expand``) and composed as its job composes it; the main block's
    ``algorithm`` dimension extended by the estimators ``beside``."""
    from hydra.core.singleton import Singleton
    from omegaconf import OmegaConf

    from gaca.compose.blocks import SWEEPS_DIR, expand, load_block
    from gaca.compose.session import HydraSession

    files = {name: load_block(name) for name in names}
    # One search path for every block, in table order, whichever of them this call composes.
    every = [files[name] if name in files else load_block(name) for name in PRESENTATION]
    search_path = list(dict.fromkeys([*(sweep.search_path for sweep in every), SWEEPS_DIR.parent]))
    # A sweep reads its block's rows in the middle of its own Hydra session (`--until-decided`): that
    # session (Hydra's global state, as its launchers carry it to jobs) is put back afterwards.
    outer = Singleton.get_state()
    session = HydraSession("local", [], search_path, Path("unused"), job_name="report")
    blocks = {}
    try:
        for name, sweep in files.items():
            composed: dict[tuple[str, ...], dict[str, object]] = {}
            seeds: set[int] = set()
            extra = _methods_beside(sweep, beside) if name == MAIN_BLOCK and beside else []
            for run in expand(sweep, extra):
                point = tuple(override for override in run if override.split("=", 1)[0] != "seed")
                seeds.update(int(override.split("=", 1)[1]) for override in run if override.startswith("seed="))
                if point not in composed:
                    config = OmegaConf.to_container(session.compose([*sweep.base_overrides(), *point]), resolve=True)
                    composed[point] = _parsed(cast(dict[str, Any], config))
            order = [*_listed_methods(sweep), *beside] if name == MAIN_BLOCK else None
            blocks[name] = _block(name, list(composed.values()), tuple(sorted(seeds)), order)
    finally:
        Singleton.set_state(outer)
    return blocks


def _listed_methods(sweep: block_files.Block) -> list[str]:
    """The estimators a block file lists under ``algorithm``, in its order (Table 1's rows)."""
    listed = [value for grid in sweep.grids for key, value in grid if key == "algorithm"]
    return list(dict.fromkeys(method for value in listed for method in value.split(",")))


def _methods_beside(sweep: block_files.Block, beside: tuple[str, ...]) -> list[str]:
    """The override that adds the estimators ``beside`` to the block file's ``algorithm`` dimension
    (each composed from its own ``algorithm/NAME.yaml`` on the config search path)."""
    return [f"algorithm={','.join(dict.fromkeys([*_listed_methods(sweep), *beside]))}"]


def _block(
    name: str, configs: list[dict[str, object]], seeds: tuple[int, ...], methods_order: list[str] | None = None
) -> Block:
    """One row per distinct ``canonical_config`` of ``configs``, labelled by the block's ``Rows``
    (a row of another estimator than the default's by that estimator's label), colliding labels
    told apart by what differs (``_distinct``)."""
    rows = PRESENTATION[name]
    labelled: dict[ConfigKey, tuple[Label, dict[str, object]]] = {}
    for config in configs:
        key = canonical_config(config)
        if key not in labelled:
            other_method = name != MAIN_BLOCK and config["algorithm.method"] != default_method()
            overrides = {
                k: config[k] for k in DEFAULT_CONFIG if normalize(config.get(k)) != normalize(DEFAULT_CONFIG[k])
            }
            labelled[key] = (_method(config) if other_method else rows.label(config), overrides)
    variants = [Variant(*label, overrides) for label, overrides in _distinct(labelled).values()]
    order = methods_order if methods_order is not None else rows.order
    ordered = sorted(variants, key=lambda v: order.index(v.name) if v.name in order else len(order))
    return Block(
        name=name,
        title=rows.title,
        variants=tuple(ordered),
        environments=tuple(dict.fromkeys(str(config["env.name"]) for config in configs)),
        scales=tuple(dict.fromkeys(str(config["model.name"]) for config in configs)),
        seeds=seeds,
    )


def _distinct(
    labelled: Mapping[ConfigKey, tuple[Label, dict[str, object]]],
) -> dict[ConfigKey, tuple[Label, dict[str, object]]]:
    """``labelled`` with every row whose name would repeat an earlier row's given the keys of its
    ``canonical_config`` that differ from that row's (``, key=value``), so that every row of a block
    reads differently in tables, legends and claims. Rows are in the sweep file's order."""
    first: dict[str, ConfigKey] = {}
    distinct = {}
    for key, ((name, label, latex), overrides) in labelled.items():
        if name in first:
            earlier = dict(first[name])
            differing = [f"{k.removeprefix('algorithm.')}={v}" for k, v in key if k in earlier and earlier[k] != v] or [
                f"{k.removeprefix('algorithm.')}={v}" for k, v in key if k not in earlier
            ]
            suffix = ", " + ", ".join(differing)
            name, label, latex = name + suffix.replace(" ", ""), label + suffix, latex + suffix.replace("_", r"\_")
        first.setdefault(name, key)
        distinct[key] = ((name, label, latex), overrides)
    return distinct


@dataclass(frozen=True)
class ReportBlocks:
    """The report's blocks, as ``report_blocks`` reads them from their sweep files."""

    by_name: Mapping[str, Block]
    """Every block of ``PRESENTATION``, in table order."""

    @property
    def main(self) -> Block:
        return self.by_name[MAIN_BLOCK]

    @property
    def ablations(self) -> tuple[Block, ...]:
        return tuple(block for block in self.by_name.values() if block.name != MAIN_BLOCK)

    @property
    def ablation_environment(self) -> str:
        """Where the ablations' sweep files run them (the first ablation's environment)."""
        return self.ablations[0].environments[0]

    @property
    def ablation_scale(self) -> str:
        return self.ablations[0].scales[0]


_BESIDE: list[tuple[str, ...]] = [()]
"""The estimators Table 1 shows beside those ``sweeps/main.yaml`` lists (``run_beside``)."""


def report_blocks() -> ReportBlocks:
    """The blocks of ``PRESENTATION``, each sweep file expanded and composed (once per process, and
    the main block once more for each set of estimators ``run_beside`` adds)."""
    return _report_blocks(_BESIDE[0])


@functools.lru_cache(maxsize=1)
def _ablations() -> dict[str, Block]:
    return _expand(tuple(name for name in PRESENTATION if name != MAIN_BLOCK))


@functools.lru_cache(maxsize=4)
def _report_blocks(beside: tuple[str, ...]) -> ReportBlocks:
    main = _expand((MAIN_BLOCK,), beside)
    return ReportBlocks({name: main[name] if name == MAIN_BLOCK else _ablations()[name] for name in PRESENTATION})


def clear_report_blocks() -> None:
    """Forget the composed blocks (a test that changes a sweep file reads them again)."""
    _ablations.cache_clear()
    _report_blocks.cache_clear()


def listed_methods() -> tuple[str, ...]:
    """The estimators ``sweeps/main.yaml`` lists, in its order."""
    from gaca.compose.blocks import load_block

    return tuple(_listed_methods(load_block(MAIN_BLOCK)))


def run_beside(methods: tuple[str, ...]) -> tuple[str, ...]:
    """Give Table 1 (and every reader of ``report_blocks().main``) a row for each registered estimator
    of ``methods`` that ``sweeps/main.yaml`` does not list, after the listed ones, and return those;
    ``()`` takes them away again. The report calls it with the estimators whose runs fill a cell of
    the main block."""
    listed, registered = listed_methods(), ESTIMATORS.in_order()
    _BESIDE[0] = tuple(m for m in dict.fromkeys(methods) if m not in listed and m in registered)
    return _BESIDE[0]


def get_block(name: str) -> Block:
    blocks = report_blocks().by_name
    try:
        return blocks[name]
    except KeyError:
        raise ValueError(f"unknown block {name!r}; known: {', '.join(blocks)}") from None


def environment_label(env: str) -> str:
    return ENVIRONMENT_LABELS.get(env, env)


def scale_label(scale: str) -> str:
    return SCALE_LABELS.get(scale, scale)
