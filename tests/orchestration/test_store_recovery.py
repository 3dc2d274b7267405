"""A store truncated mid-study: every command says so in one line (file, newest backup, what to do)
and leaves no lock file; `gaca backup restore` brings back the state before the last sweep, and the
next sweep reruns only the run logged after that backup, to the same values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import TINY, by_key, gaca, logged_runs

pytestmark = pytest.mark.slow

RUN = ["detector", "seed=0", *TINY]


def values(run):
    return {name: points for name, points in run.history.items() if not name.startswith("perf/")}


def test_a_truncated_store_is_restored_from_its_backup_and_the_lost_run_rerun(tmp_path: Path):
    database = tmp_path / "mlflow.db"
    uri = f"sqlite:///{database}"
    first = gaca("sweep", *RUN, "algorithm.detector=entropy", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "backup of the MLflow store" not in first.stderr  # nothing to back up yet
    second = gaca("sweep", *RUN, "algorithm.detector=uniform", cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "backup of the MLflow store: " in second.stderr
    before = by_key(logged_runs(uri))
    assert len(before) == 2

    os.truncate(database, database.stat().st_size * 2 // 3)
    commands = {
        "sweep": gaca("sweep", *RUN, "algorithm.detector=loo", cwd=tmp_path),
        "status": gaca("status", "detector", cwd=tmp_path),
        "train": gaca("train", *TINY, "seed=5", cwd=tmp_path),
        "report": gaca("report", "detector", "--out", str(tmp_path / "reports"), cwd=tmp_path),
    }
    (backup_file,) = (tmp_path / "mlflow-backups").glob("mlflow-*-sweep-detector.db")
    for name, result in commands.items():
        lines = result.stderr.strip().splitlines()
        assert result.returncode != 0, name
        assert len(lines) == 1, (name, result.stderr[-3000:])
        assert f"{database} is damaged" in lines[0] and str(backup_file) in lines[0], (name, lines[0])
        assert "1 finished runs" in lines[0] and "gaca backup restore" in lines[0], name
        assert "SELECT" not in result.stderr and "Traceback" not in result.stderr, name
    assert not (tmp_path / "mlflow.db.lock").exists()
    assert not (tmp_path / "reports").exists()

    listed = gaca("backup", "list", cwd=tmp_path)
    assert listed.returncode == 0 and backup_file.name in listed.stdout
    restored = gaca("backup", "restore", cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert f"from {backup_file.name} (1 finished runs)" in restored.stdout
    assert list(tmp_path.glob("mlflow.db.replaced-*"))  # the damaged file is kept aside

    rerun = gaca("sweep", *RUN, "algorithm.detector=entropy,uniform", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert rerun.stdout.count("skip (done)") == 1 and "1 of 1 launched runs done" in rerun.stdout
    after = by_key(logged_runs(f"sqlite:///{tmp_path}/./mlflow.db"))  # MLflow caches the replaced file under `uri`
    assert set(after) == set(before)
    for key, run in after.items():
        assert run.status == "FINISHED"
        assert values(run) == values(before[key]), key  # the rerun logged what the lost run had
