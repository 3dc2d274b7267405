"""Hydra for the driver: each run composed exactly as its job will compose it, and the submitit
launcher (``hydra/launcher=submitit_local|submitit_slurm``) instantiated from the same config.

This is what ``gaca train -m`` would do (Hydra's ``multirun`` composes a master config and hands
the launcher one override list per job), minus the sweeper: the driver decides which runs to
launch (valid, distinct, not finished) before any job starts. Hydra exposes no public API for a
multirun without its sweeper, so the few internal calls live here and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from gaca.compose import CONF_DIR

LAUNCHERS = tuple(sorted(path.stem for path in (CONF_DIR / "launcher").glob("*.yaml")))
"""``launcher=NAME`` choices: the files of ``conf/launcher/``."""
DEFAULT_LAUNCHER = "local"
CONFIG_NAME = "train"


def quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value (paths and URIs may hold any character)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def split_overrides(overrides: list[str]) -> tuple[str, list[str], list[str]]:
    """(launcher name, Hydra's own overrides, run overrides) of a command line.

    ``launcher=slurm`` selects ``conf/launcher/slurm.yaml``; ``hydra.…`` overrides (cluster
    settings) go to the launcher; everything else is a run override, grid syntax allowed.
    """
    launcher = DEFAULT_LAUNCHER
    hydra_overrides: list[str] = []
    run_overrides: list[str] = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        if key == "launcher":
            launcher = override.split("=", 1)[1] if "=" in override else ""
            if launcher not in LAUNCHERS:
                raise ValueError(f"unknown launcher {launcher!r}; known: {', '.join(LAUNCHERS)} (conf/launcher/)")
        elif key == "hydra" or key.startswith(("hydra.", "hydra/")):
            hydra_overrides.append(override)
        else:
            run_overrides.append(override)
    return launcher, hydra_overrides, run_overrides


class HydraSession:
    """The Hydra config loader of one sweep, and its submitit launcher.

    ``search_paths`` are folders holding block-file groups (the repository root holds ``sweeps/``);
    ``sweep_dir`` is Hydra's ``hydra.sweep.dir``: job folders and the submitit logs go there.
    """

    def __init__(
        self, launcher: str, hydra_overrides: list[str], search_paths: list[Path], sweep_dir: Path, job_name: str
    ) -> None:
        from hydra._internal.hydra import Hydra
        from hydra._internal.utils import create_config_search_path
        from hydra.core.global_hydra import GlobalHydra
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        GlobalHydra.instance().clear()
        self.hydra = Hydra.create_main_hydra2(
            task_name=job_name, config_search_path=create_config_search_path(str(CONF_DIR))
        )
        paths = ",".join(quoted(f"file://{path}") for path in dict.fromkeys(search_paths))
        self.launcher_override = f"+launcher={launcher}"
        self.launcher_name = launcher
        master_overrides = [
            f"hydra.searchpath=[{paths}]",
            f"hydra.sweep.dir={quoted(str(sweep_dir))}",
            f"hydra.job.name={quoted(job_name)}",
            *hydra_overrides,
            self.launcher_override,
        ]
        self.master: DictConfig = self.hydra.compose_config(
            CONFIG_NAME, overrides=master_overrides, run_mode=RunMode.MULTIRUN, with_log_configuration=False
        )
        self.sweep_dir = sweep_dir
        # Runs read launcher fields (trainer.threads = ${hydra:launcher.cpus_per_task}), as in the job.
        HydraConfig.instance().set_config(self.master)

    def compose(self, overrides: list[str]) -> DictConfig:
        """The config that the task function of a job given ``overrides`` receives (Hydra's node removed)."""
        from omegaconf import open_dict

        config = self.hydra.config_loader.load_sweep_config(self.master, [self.launcher_override, *overrides])
        with open_dict(config):
            del config["hydra"]
        return config

    def job_overrides(self, overrides: list[str]) -> list[str]:
        """What the launcher hands a job: the launcher choice (its ``hydra.launcher.*`` overrides apply) and the run."""
        return [self.launcher_override, *overrides]

    @property
    def launcher_config(self) -> DictConfig:
        """``hydra.launcher`` as composed: the submitit launcher's fields."""
        return self.master.hydra.launcher

    @property
    def parallel_jobs(self) -> int | None:
        """Jobs the driver keeps in flight: None for SLURM (the array's own throttle) else the local slots."""
        if self.launcher_config._target_.endswith("SlurmLauncher"):
            return None
        configured = self.master.hydra.sweeper.get("max_batch_size")
        if configured:
            return int(configured)
        return max(1, (os.cpu_count() or 1) // int(self.launcher_config.get("cpus_per_task") or 1))

    def launcher(self, task_function: Callable[[DictConfig], Any]):
        """Hydra's submitit launcher for this session, set up with ``task_function`` as the job."""
        from hydra._internal.callbacks import Callbacks
        from hydra.core.plugins import Plugins
        from hydra.core.utils import setup_globals
        from hydra.types import HydraContext

        setup_globals()
        return Plugins.instance().instantiate_launcher(
            hydra_context=HydraContext(config_loader=self.hydra.config_loader, callbacks=Callbacks(self.master)),
            task_function=task_function,
            config=self.master,
        )
