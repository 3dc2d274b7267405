"""Tiny sweep settings, isolated working folders, the real `gaca` CLI as a subprocess, and MLflow readers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from gaca.bench.soak import TINY_RUN
from gaca.bench.tracking import answers as healthy  # the library's /health probe
from gaca.bench.tracking import free_port

TINY = TINY_RUN  # a run in seconds (gaca.bench.soak, which kills sweeps of it)
EVAL_STEPS = [0, 2, 4, 6]
TRAIN_STEPS = [1, 2, 3, 4, 5, 6]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a `gaca` subprocess: no inherited tracking URI or run, no network for Hugging Face."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def gaca(*args: str, cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    """Run the real CLI, `python -m gaca.cli ARGS`, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "gaca.cli", *args],
        cwd=cwd,
        env=cli_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    """A real `gaca mlflow` server with its store in ``folder``; yields its URI once it answers."""
    port = free_port()
    log = open(folder / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "gaca.cli", "mlflow", "--port", str(port)],
        cwd=folder,
        env=cli_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthy(uri), 180, "the MLflow server to answer /health", interval_s=1)
        yield uri
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
        log.close()


@dataclass
class LoggedRun:
    """One MLflow run as the tests compare them: status, tags, params and every metric point."""

    run_id: str
    status: str
    tags: dict[str, str]
    params: dict[str, str]
    history: dict[str, list[tuple[int, float]]]
    start_ms: int
    end_ms: int | None


def logged_runs(uri: str, experiment: str = "gaca") -> list[LoggedRun]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    runs = []
    for run in client.search_runs([found.experiment_id], max_results=1000):
        history = {
            name: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
            for name in run.data.metrics
        }
        runs.append(
            LoggedRun(
                run.info.run_id,
                run.info.status,
                dict(run.data.tags),
                dict(run.data.params),
                history,
                run.info.start_time,
                run.info.end_time,
            )
        )
    return runs


def by_key(runs: list[LoggedRun]) -> dict[str, LoggedRun]:
    keyed = {run.tags["gaca.run_key"]: run for run in runs}
    assert len(keyed) == len(runs), "two MLflow runs share a run key"
    return keyed


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder as the working folder, with no tracking URI inherited."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tmp_path


@pytest.fixture(autouse=True)
def _fresh_hydra():
    """In-process drivers initialise Hydra's globals; other test folders compose from scratch."""
    yield
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    GlobalHydra.instance().clear()
    HydraConfig.instance().cfg = None
