"""`gaca train [overrides]`: compose conf/train.yaml with Hydra, validate, train."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from gaca.registry import Registry

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


class ConfigError(ValueError):
    """A composed config that fails validation; the message names the key."""


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data, Hydra's own node removed."""
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as error:
        raise ConfigError(f"{error.full_key} is required (it has no default); set it with {error.full_key}=...") from None
    resolved.pop("hydra", None)
    return resolved


def validate(cfg: DictConfig):
    """(RunConfig, resolved dict) or ConfigError naming the key."""
    from gaca.trainer.config import RunConfig

    resolved = resolve(cfg)
    try:
        return RunConfig.from_dict(resolved), resolved
    except ValueError as error:
        raise ConfigError(str(error)) from None


TRAINERS: Registry[Callable[[Any, dict[str, Any]], Any]] = Registry("backend")
"""``backend.name`` -> what trains a validated run: ``(RunConfig, resolved dict) -> result``."""


@TRAINERS.register("cpu")
def _train_on_cpu(run, resolved: dict[str, Any]):
    from gaca.trainer.loop import train

    return train(run, resolved)


@TRAINERS.register("verl")
def _train_with_verl(run, resolved: dict[str, Any]):
    from gaca.paper.launch import launch

    return launch(run, resolved)


def train_task(cfg: DictConfig) -> float | None:
    """The Hydra task function (single runs and multirun jobs): returns the final eval success."""
    from gaca.tracking.secrets import redact_uri
    from gaca.tracking.store import resolve_tracking_uri

    run, resolved = validate(cfg)
    result = TRAINERS.get(run.backend.name)(run, resolved)
    uri = resolve_tracking_uri(run.tracking.uri)
    if result.skipped:
        print(f"gaca train: run {result.run_key} was already finished (MLflow run {result.run_id} in {redact_uri(uri)})")
    else:
        curve = ", ".join(f"{i}: {s:.2f}" for i, s in result.curve or [])
        print(f"gaca train: run {result.run_key} finished; eval success by iteration {{{curve}}}")
        print(f"  MLflow run {result.run_id} in experiment {run.tracking.experiment!r} at {redact_uri(uri)} (browse: gaca mlflow)")
    return result.final_eval_success


def main(argv: list[str]) -> int:
    import hydra

    from gaca.tracking.secrets import redact_text

    @hydra.main(config_path=str(CONF_DIR), config_name="train", version_base=None)
    def app(cfg: DictConfig) -> float | None:
        try:
            return train_task(cfg)
        except ConfigError as error:
            print(f"gaca train: invalid config: {redact_text(error)}", file=sys.stderr)
            sys.exit(2)

    sys.argv = ["gaca train", *argv]
    app()
    return 0
