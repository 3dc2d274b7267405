"""Paper-scale (backend=verl) configs composed through the real config tree, verl's own config
folder, the CPU stand-in trainer, and the real `gaca` CLI as a subprocess."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from gaca.compose import CONF_DIR, validate

from ....orchestration.conftest import gaca  # noqa: F401  (the real CLI as a subprocess; the paper tests import it from here)

STANDIN = Path(__file__).with_name("standin_main_ppo.py")
"""The CPU stand-in for `python -m verl.trainer.main_ppo`."""
MODEL = "/models/Qwen2.5-1.5B-Instruct"
"""A checkpoint path: only written into the command line (nothing loads it here)."""
PAPER = ["backend=verl", "trainer=paper", "model=path", f"model.path={MODEL}", "env=household"]


def standin_overrides(iterations: int = 4, eval_every: int = 2) -> list[str]:
    """A paper run whose trainer is the stand-in: a few steps, a checkpoint after each, as on a GPU node
    (``backend.device=cuda``: on this machine ``auto`` would choose the CPU job, one logical GPU)."""
    return [
        *PAPER,
        "backend.device=cuda",
        f"trainer.iterations={iterations}",
        f"trainer.eval_every={eval_every}",
        "trainer.checkpoint_every=1",
        f"backend.trainer_command=['{sys.executable}','{STANDIN}']",
    ]


def compose_run(*overrides: str):
    """(RunConfig, resolved dict) of conf/train.yaml with ``overrides``, as `gaca train` validates it."""
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("train", overrides=list(overrides))
    return validate(cfg)


def verl_config_dir() -> str:
    verl = pytest.importorskip("verl", reason="needs the verl extra (CI installs it)")
    return str(Path(verl.__file__).parent / "trainer" / "config")


def compose_verl(overrides: list[str]):
    """verl's own ppo_trainer.yaml with ``overrides``, through Hydra's compose API."""
    with initialize_config_dir(verl_config_dir(), version_base=None):
        return compose("ppo_trainer", overrides=overrides)


@pytest.fixture(autouse=True)
def _fresh_hydra():
    yield
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    GlobalHydra.instance().clear()
    HydraConfig.instance().cfg = None
