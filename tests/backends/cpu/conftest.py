"""Tiny training configs composed through the real Hydra config tree, and an isolated MLflow store."""

import pytest
import torch
from hydra import compose, initialize_config_dir

from gaca.compose import CONF_DIR, validate

# Seconds, not minutes: a short horizon, two tasks, a few evaluation tasks, a token BC init and no prior
# stage (quick's 150 prior updates were most of such a run; tests/backends/cpu/test_prior_stage.py sets its own),
# on one torch thread (at these sizes a second thread adds synchronisation, not speed, and the suite's two
# workers share two cores).
TINY = [
    "trainer=quick",
    "trainer.iterations=4",
    "trainer.tasks_per_iteration=2",
    "trainer.group_size=4",
    "trainer.eval_every=2",
    "trainer.num_eval_tasks=4",
    "trainer.checkpoint_every=2",
    "trainer.bc.episodes=4",
    "trainer.bc.steps=3",
    "trainer.bc.prior_steps=0",
    "trainer.threads=1",
    "env.horizon=6",
    "env.num_train_tasks=64",
    "model.max_prompt_tokens=48",
]


def _compose_run(*overrides: str):
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("train", overrides=[*TINY, *overrides])
    return validate(cfg)


@pytest.fixture
def tiny_overrides() -> list[str]:
    """The TINY overrides, for a run through the command line."""
    return list(TINY)


@pytest.fixture
def compose_run():
    """compose_run(*overrides) -> (RunConfig, resolved dict) of the TINY config plus overrides."""
    return _compose_run


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh working folder with its own SQLite store; torch settings restored afterwards."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    threads = torch.get_num_threads()
    yield tmp_path, uri
    torch.set_num_threads(threads)
