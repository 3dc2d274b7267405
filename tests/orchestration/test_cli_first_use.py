"""What a careful first user runs into, through the real CLI: an unreachable tracking server, a bad
value that only the pool can reject, a typo, a missing store, no SLURM, a folder that cannot be
written. Each ends with one line that says what to do, and leaves the working folder as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gaca.tracking.store import prepare_store

from .conftest import TINY, free_port, gaca

pytestmark = pytest.mark.slow


def assert_one_line(result, code: int, *expected: str) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "command",
    [("train", *TINY), ("sweep", "detector", *TINY), ("sweep", "detector", "--dry-run"), ("status", "detector")],
    ids=["train", "sweep", "dry-run", "status"],
)
def test_an_unreachable_tracking_server_is_one_line_naming_it_masked_and_nothing_is_created(tmp_path: Path, command):
    port = free_port()
    result = gaca(*command, cwd=tmp_path, MLFLOW_TRACKING_URI=f"http://alice:s3cret@127.0.0.1:{port}")
    assert_one_line(result, 2 if command[0] == "sweep" else 1, f"127.0.0.1:{port}", "does not answer", "gaca mlflow")
    assert "s3cret" not in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []


def test_values_the_pool_cannot_serve_typos_and_folders_that_cannot_be_written_fail_before_anything_is_created(
    tmp_path: Path,
):
    assert_one_line(
        gaca("train", "trainer.tasks_per_iteration=100000", cwd=tmp_path),
        2,
        "trainer.tasks_per_iteration=100000",
        "1024 training tasks",
    )
    assert_one_line(gaca("train", "trainer.num_eval_tasks=500", cwd=tmp_path), 2, "128 held-out tasks")
    assert_one_line(gaca("train", "algorithm.lamda0=0.3", cwd=tmp_path), 2, "did you mean algorithm.lambda0?")
    assert_one_line(gaca("train", "env=forest", cwd=tmp_path), 2, "Available options in 'env':", "household")
    rejected = gaca("train", "backend.env_vars={WANDB_API_KEY: 987654321}", cwd=tmp_path)
    assert_one_line(rejected, 2, "backend.env_vars")
    assert "987654321" not in rejected.stdout + rejected.stderr  # Hydra's own message would echo it
    assert list(tmp_path.iterdir()) == []  # no entry.log, no mlflow.db

    (tmp_path / "a-file").write_text("")
    assert_one_line(
        gaca("train", *TINY, "output_dir=a-file/runs", cwd=tmp_path), 2, "output_dir=a-file/runs", "not a folder"
    )
    assert_one_line(gaca("sweep", "detector", *TINY, "output_dir=a-file/runs", cwd=tmp_path), 2, "not a folder")
    store = f"sqlite:///{tmp_path / 'a-file' / 'mlflow.db'}"
    assert_one_line(gaca("train", *TINY, cwd=tmp_path, MLFLOW_TRACKING_URI=store), 1, "cannot be written")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.skipif(shutil.which("sbatch") is not None, reason="SLURM is installed here")
def test_launcher_slurm_without_slurm_fails_before_the_store_is_created(tmp_path: Path):
    assert_one_line(gaca("sweep", "detector", *TINY, "launcher=slurm", cwd=tmp_path), 2, "sbatch is not on PATH")
    assert list(tmp_path.iterdir()) == []
    assert gaca("sweep", "detector", *TINY, "launcher=slurm", "--dry-run", cwd=tmp_path).returncode == 0


def test_report_without_a_finished_run_says_to_run_a_sweep_first_and_creates_nothing(tmp_path: Path):
    line = assert_one_line(gaca("report", "detector", cwd=tmp_path), 1, "no MLflow store", "run a sweep first")
    assert "gaca sweep detector" in line
    assert list(tmp_path.iterdir()) == []

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    from mlflow.tracking import MlflowClient

    MlflowClient(uri).create_run(prepare_store(uri, "gaca"))  # a run still RUNNING
    assert_one_line(gaca("report", "detector", cwd=tmp_path), 1, "no finished run", "run a sweep first")
    assert not (tmp_path / "reports").exists()


def test_train_help_is_titled_gaca_train(tmp_path: Path):
    result = gaca("train", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("gaca train: train one run") and "powered by Hydra" not in result.stdout
    assert list(tmp_path.iterdir()) == []
