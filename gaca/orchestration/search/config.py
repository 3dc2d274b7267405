"""The search config: ``conf/search/<name>.yaml`` with the command line's flags, and a trial's run overrides."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

from gaca.compose import CONF_DIR
from gaca.contract import SEEDS

SEARCH_DIR = CONF_DIR / "search"
BLOCK = "search"
"""The ``gaca.block`` tag of every search run."""
SEARCH_PREFIX = "search."
"""Command-line overrides of the search config itself, e.g. ``search.seeds=[0,1]``."""
SET_BY_SEARCH = ("algorithm", "seed", "block")
"""Run overrides the search sets itself (with the keys of its space)."""


@dataclass(frozen=True)
class SearchConfig:
    """``conf/search/<name>.yaml`` with the command line's flags applied."""

    study: str
    storage: str
    trials: int
    workers: int
    seeds: tuple[int, ...]
    """Each trial trains once per seed; the file's null means ``gaca.contract.SEEDS``."""
    sampler_seed: int
    sampler_startup_trials: int
    pruner_startup_trials: int
    pruner_warmup_steps: int
    space: Mapping[str, tuple[float, float]]
    reports: Path
    confirm_trials: int = 2
    """The best complete trials re-run on fresh seeds after the study (``search.confirm``)."""
    confirm_seeds: int = 3
    """Fresh seeds each finalist and the default gate train on; 0: no confirmation."""

    @property
    def report_dir(self) -> Path:
        return self.reports / self.study


def load_search(
    name: str,
    overrides: Sequence[str] = (),
    trials: int | None = None,
    workers: int | None = None,
    study: str | None = None,
    storage: str | None = None,
) -> SearchConfig:
    """The search config; ``overrides`` are ``search.KEY=VALUE`` (e.g. ``search.seeds=[0,1]``)."""
    path = SEARCH_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SEARCH_DIR.glob("*.yaml")))
        raise ValueError(f"unknown search {name!r}; known: {known} (conf/search/)")
    loaded = OmegaConf.load(path)
    OmegaConf.set_struct(loaded, True)  # an override of a key the file lacks is an error
    try:
        loaded.merge_with_dotlist([override[len(SEARCH_PREFIX) :] for override in overrides])
    except Exception as error:
        raise ValueError(f"search override: {error}") from None
    raw = cast(dict[str, Any], OmegaConf.to_container(loaded, resolve=True))  # a mapping file
    space: dict[str, tuple[float, float]] = {}
    for key, bounds in raw["space"].items():
        if not (isinstance(bounds, list) and len(bounds) == 2 and bounds[0] < bounds[1]):
            raise ValueError(f"{path}: space.{key} must be [low, high] with low < high, got {bounds!r}")
        space[key] = (float(bounds[0]), float(bounds[1]))
    config = SearchConfig(
        study=study or raw["study"],
        storage=storage or raw["storage"] or f"sqlite:///{Path.cwd() / 'optuna.db'}",
        trials=raw["trials"] if trials is None else trials,
        workers=raw["workers"] if workers is None else workers,
        seeds=SEEDS if raw["seeds"] is None else tuple(raw["seeds"]),
        sampler_seed=raw["sampler"]["seed"],
        sampler_startup_trials=raw["sampler"]["n_startup_trials"],
        pruner_startup_trials=raw["pruner"]["n_startup_trials"],
        pruner_warmup_steps=raw["pruner"]["n_warmup_steps"],
        space=space,
        reports=Path(raw["reports"]),
        confirm_trials=raw["confirm"]["trials"],
        confirm_seeds=raw["confirm"]["seeds"],
    )
    if config.confirm_trials < 1 or config.confirm_seeds < 0:
        raise ValueError(
            f"search.confirm.trials must be >= 1 and search.confirm.seeds >= 0, got {config.confirm_trials}, "
            f"{config.confirm_seeds}"
        )
    if config.trials < 1 or config.workers < 1 or not config.seeds:
        raise ValueError(
            "--trials and --workers must be >= 1 and seeds non-empty, "
            f"got {config.trials}, {config.workers}, {config.seeds}"
        )
    return config


def trial_overrides(params: Mapping[str, float], seed: int, run_overrides: list[str]) -> list[str]:
    """A trial's run for one seed: GACA with the sampled gate, tagged block=search."""
    gate = [f"{key}={value!r}" for key, value in params.items()]
    return [f"block={BLOCK}", "algorithm=gaca", *run_overrides, *gate, f"seed={seed}"]
