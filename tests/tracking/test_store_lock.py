"""Concurrent first use of a fresh SQLite store: real processes, started together, all succeed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from gaca.tracking.store import store_exists

PROCESSES = 8

# What a `gaca train` process does with the store: prepare it, create its run, log, close.
FIRST_USER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    uri, go, seed = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    from mlflow.tracking import MlflowClient  # imported before the start signal: the race is on the store
    from gaca.tracking.run import RunLogger
    from gaca.tracking.store import prepare_store
    while not go.exists():
        time.sleep(0.001)
    prepare_store(uri, "gaca")
    logger = RunLogger.open(uri, "gaca", f"key{seed}", f"run{seed}", {"gaca.seed": seed}, {"seed": seed})
    for step in range(3):
        logger.log_metrics({"train/success_rate": step / 2}, step=step)
    logger.finish()
    """
)


def test_eight_processes_creating_one_fresh_sqlite_store_all_succeed(tmp_path: Path):
    database = tmp_path / "store" / "mlflow.db"
    uri = f"sqlite:///{database}"
    go = tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_USER, uri, str(go), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(PROCESSES)
    ]
    time.sleep(0.5)  # not a timing assertion: gives the interpreters a head start on their imports
    assert not store_exists(uri)
    go.touch()
    results = [process.communicate(timeout=300) for process in processes]
    failures = [(p.returncode, err[-2000:]) for p, (_, err) in zip(processes, results) if p.returncode != 0]
    assert not failures

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("gaca")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(run.data.tags["gaca.seed"] for run in runs) == [str(seed) for seed in range(PROCESSES)]
    assert {run.info.status for run in runs} == {"FINISHED"}
    assert all(len(client.get_metric_history(run.info.run_id, "train/success_rate")) == 3 for run in runs)
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert not [name for name in tables if name.startswith("_alembic_tmp")]
        assert connection.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)


def test_reading_a_missing_store_does_not_create_it(tmp_path: Path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert not store_exists(uri)
    assert not (tmp_path / "mlflow.db").exists()
