"""Config composition: ``conf/train.yaml`` with overrides, through Hydra's compose API, validated
into a ``RunConfig``. ``gaca train``, the orchestration, the search and the report all compose here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
"""The project's config groups (``algorithm``, ``env``, ``model``, ``trainer``, ``backend``, ``launcher``,
``search``)."""


class ConfigError(ValueError):
    """A composed config that fails validation; the message names the key."""


def compose(overrides: list[str]) -> DictConfig:
    """conf/train.yaml composed with ``overrides`` through Hydra's compose API (no task run)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return hydra_compose("train", overrides=overrides)


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data, Hydra's own node removed."""
    try:
        resolved = cast(
            dict[str, Any], OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        )  # a config root is a mapping
    except MissingMandatoryValue as error:
        raise ConfigError(
            f"{error.full_key} is required (it has no default); set it with {error.full_key}=..."
        ) from None
    resolved.pop("hydra", None)
    return resolved


def validate(cfg: DictConfig):
    """(RunConfig, resolved dict) or ConfigError naming the key."""
    from gaca.backends.config import RunConfig

    resolved = resolve(cfg)
    trainer = resolved.get("trainer")
    if isinstance(trainer, dict) and "threads" in trainer and trainer["threads"] is None:
        import torch

        trainer["threads"] = torch.get_num_threads()  # torch's default here: the count is part of the run key
    try:
        return RunConfig.from_dict(resolved), resolved
    except ValueError as error:
        raise ConfigError(str(error)) from None
