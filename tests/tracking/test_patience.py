"""A run whose tracking server stays away longer than its patience (GACA_TRACKING_PATIENCE_S) fails in
one line (the server killed after the run's first iteration), leaves its MLflow run unfinished, and
the same command run again resumes it into the same MLflow run: every step once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gaca.bench.tracking import running_server

from ..orchestration.conftest import TINY, cli_env, gaca, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ITERATIONS = 30
RUN = [*TINY, f"trainer.iterations={ITERATIONS}", "seed=3", "trainer.threads=1"]
PATIENCE_S = 5


def metric_rows(store: Path) -> int:
    try:
        connection = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return connection.execute("SELECT count(*) FROM metrics WHERE step >= 1").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


def test_a_run_cut_off_from_the_server_fails_in_one_line_and_resumes(tmp_path: Path):
    server_dir, work = tmp_path / "server", tmp_path / "work"
    server_dir.mkdir()
    work.mkdir()
    store = server_dir / "mlflow.db"
    with running_server(server_dir, f"sqlite:///{store}") as server:
        env = {
            "MLFLOW_TRACKING_URI": server.uri,
            **server.credentials(),
            "GACA_TRACKING_PATIENCE_S": str(PATIENCE_S),
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",  # MLflow's own retries (minutes by default) left out
        }
        cut = subprocess.Popen(
            [sys.executable, "-m", "gaca.cli", "train", *RUN],
            cwd=work,
            env=cli_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(lambda: metric_rows(store) > 0 or cut.poll() is not None, 300, "the run's first iteration")
        server.stop(crash=True)
        stopped = time.monotonic()
        _, cut_err = cut.communicate(timeout=300)
        waited = time.monotonic() - stopped
        server.start()
        resumed = gaca("train", *RUN, cwd=work, **env)
        os.environ.update(server.credentials())
        try:
            client = MlflowClient(tracking_uri=server.uri)
            runs = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
            history = [m.step for m in client.get_metric_history(runs[0].info.run_id, "perf/iteration_s")]
        finally:
            os.environ.pop("MLFLOW_TRACKING_USERNAME")
            os.environ.pop("MLFLOW_TRACKING_PASSWORD")
    assert cut.returncode == 1, cut_err[-3000:]
    last = cut_err.strip().splitlines()[-1]
    assert "did not answer for" in last and "rerun" in last and "Traceback" not in cut_err, cut_err[-3000:]
    assert waited < PATIENCE_S + 60, waited
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert [run.info.status for run in runs] == ["FINISHED"]
    assert sorted(history) == list(range(1, ITERATIONS + 1))  # every step once, across the cut
