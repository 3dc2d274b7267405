"""Hydra for the driver: each run composed exactly as its job will compose it, and the submitit
launcher (``hydra/launcher=submitit_local|submitit_slurm``) instantiated from the same config.

This is what ``gaca train -m`` would do (Hydra's ``multirun`` composes a master config and hands
the launcher one override list per job), minus the sweeper: the driver decides which runs to
launch (valid, distinct, not finished) before any job starts. Everything goes through Hydra's
public API: the compose API for the master config, its config loader for each job's config, and the
plugin registry for the launcher.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from gaca.compose import CONF_DIR
from gaca.text import quoted

LAUNCHERS = tuple(sorted(path.stem for path in (CONF_DIR / "launcher").glob("*.yaml")))
"""``launcher=NAME`` choices: the files of ``conf/launcher/``."""
DEFAULT_LAUNCHER = "local"
CONFIG_NAME = "train"


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
        from hydra import compose, initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra
        from hydra.core.hydra_config import HydraConfig
        from hydra.version import VersionBase

        GlobalHydra.instance().clear()
        # The compose API sets Hydra's version base; the launcher and its jobs keep the one this process had
        # (unset: Hydra's 1.1 defaults), as with Hydra's own multirun.
        version_base = copy.deepcopy(VersionBase.instance())
        initialize_config_dir(str(CONF_DIR), job_name=job_name, version_base=None)  # held until the next clear
        VersionBase.set_instance(version_base)
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
        self.master: DictConfig = compose(CONFIG_NAME, overrides=master_overrides, return_hydra_config=True)
        self.sweep_dir = sweep_dir
        # Runs read launcher fields (trainer.threads = ${hydra:launcher.cpus_per_task}), as in the job.
        HydraConfig.instance().set_config(self.master)

    def compose(self, overrides: list[str]) -> DictConfig:
        """The config that the task function of a job given ``overrides`` receives (Hydra's node removed)."""
        from hydra.core.global_hydra import GlobalHydra
        from omegaconf import open_dict

        loader = GlobalHydra.instance().config_loader()
        config = loader.load_sweep_config(self.master, [self.launcher_override, *overrides])
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
        from hydra.core.global_hydra import GlobalHydra
        from hydra.core.plugins import Plugins
        from hydra.core.utils import setup_globals
        from hydra.types import HydraContext

        setup_globals()
        callbacks: Any = JobCallbacks(self.master)  # Hydra's own Callbacks class is internal
        return Plugins.instance().instantiate_launcher(
            hydra_context=HydraContext(config_loader=GlobalHydra.instance().config_loader(), callbacks=callbacks),
            task_function=task_function,
            config=self.master,
        )


class JobCallbacks:
    """``hydra.callbacks`` of a config, told of each job's start and end as Hydra's ``run_job`` tells
    them (in the job's process: the launcher pickles this with itself); a callback that raises is a warning."""

    def __init__(self, config: DictConfig) -> None:
        from hydra.utils import instantiate
        from omegaconf import OmegaConf

        given = OmegaConf.select(config, "hydra.callbacks")
        self.callbacks = [instantiate(params) for params in given.values()] if given else []

    def _notify(self, name: str, reverse: bool = False, **kwargs: Any) -> None:
        import warnings

        for callback in reversed(self.callbacks) if reverse else self.callbacks:
            try:
                getattr(callback, name)(**kwargs)
            except Exception as error:
                warnings.warn(
                    f"Callback {type(callback).__name__}.{name} raised {type(error).__name__}: {error}", stacklevel=2
                )

    def on_job_start(self, config: DictConfig, *, task_function: Callable[[DictConfig], Any], **kwargs: Any) -> None:
        self._notify("on_job_start", config=config, task_function=task_function, **kwargs)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        self._notify("on_job_end", reverse=True, config=config, job_return=job_return, **kwargs)
