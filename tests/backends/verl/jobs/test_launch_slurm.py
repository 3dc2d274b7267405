"""backend=verl runs dispatched by `gaca sweep ... launcher=slurm` through the real single-node SLURM
cluster: one job array, each job the real job wrapper, the trainer process the CPU stand-in (the
only part that needs a GPU). Both runs end FINISHED in MLflow as the tracking contract says. On the
cluster's `gpu` partition (four GPUs without devices), GPU requests are scheduled and accounted as
on a GPU partition."""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ....orchestration.conftest import wait_for
from .conftest import gaca, standin_overrides

pytestmark = [pytest.mark.slurm, pytest.mark.verl, pytest.mark.slow]
pytest.importorskip("verl", reason="the stand-in logs through verl's own MLflow logger")


def block_file(folder: Path, name: str = "verl-e2e", seeds: str = "0") -> Path:
    """A block of the household and shop runs of ``seeds``."""
    path = folder / "blocks" / f"{name}.yaml"
    path.parent.mkdir()
    path.write_text(f"# @package _global_\nblock: {name}\nsweep:\n  - seed: {seeds}\n    env: household,shop\n")
    return path


@pytest.mark.timeout(900)
def test_verl_runs_go_through_slurm_and_land_in_mlflow_like_any_other_run(tmp_path: Path):
    result = gaca(
        "sweep",
        str(block_file(tmp_path)),
        *[o for o in standin_overrides(iterations=3, eval_every=2) if not o.startswith("env=")],  # the grid's envs
        "algorithm=gaca",
        "launcher=slurm",
        "hydra.launcher.mem_gb=3",
        "hydra.launcher.timeout_min=15",
        cwd=tmp_path,
        timeout=840,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "launching 2 jobs through submitit_slurm (as one job array)" in result.stdout
    assert result.stdout.count("verl job #") == 2

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("gaca")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(run.data.tags["gaca.env"] for run in runs) == ["household", "shop"]
    for run in runs:
        assert run.info.status == "FINISHED"
        assert run.data.tags["gaca.block"] == "verl-e2e" and run.data.tags["gaca.backend"] == "verl"
        evaluations = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "eval/success_rate"))
        assert evaluations == [(0, 0.1), (2, 0.14), (3, 0.16)]
        assert run.data.metrics["final/eval_success_rate"] == 0.16
        assert run.data.params["env/max_steps"] == ("50" if run.data.tags["gaca.env"] == "household" else "15")
    logs = "".join(path.read_text() for path in tmp_path.glob("multirun/**/*_log.err"))
    assert logs.count("gaca job: verl trainer for run") == 2


def most_at_once(intervals: list[tuple[datetime, datetime]]) -> int:
    """The most intervals [start, end) that overlap at one instant (one that ends as another starts:
    not at once)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, change in events:  # at equal times the end (-1) sorts before the start (+1)
        running += change
        most = max(most, running)
    return most


@pytest.mark.timeout(900)
def test_verl_runs_asking_for_2_gpus_each_get_2_and_at_most_2_share_the_4_gpus(tmp_path: Path):
    # The partition lets up to 4 jobs share a core, so the node's 4 GPUs alone limit GPU jobs.
    partition = subprocess.run(["scontrol", "show", "partition", "gpu"], capture_output=True, text=True)
    node = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True)
    assert "OverSubscribe=FORCE:4" in partition.stdout and "gres/gpu=4" in node.stdout, (
        "the cluster lacks the gpu partition of scripts/local-slurm.sh; `bash scripts/local-slurm.sh start` "
        f"restarts a running cluster with it: {partition.stderr}"
    )

    result = gaca(
        "sweep",
        str(block_file(tmp_path, "verl-gpus", seeds="0,1")),
        *[o for o in standin_overrides(iterations=2, eval_every=2) if not o.startswith("env=")],
        "algorithm=gaca",
        "launcher=slurm",
        "hydra.launcher.partition=gpu",
        "hydra.launcher.gpus_per_node=2",
        "hydra.launcher.array_parallelism=4",
        "hydra.launcher.mem_gb=3",
        "hydra.launcher.timeout_min=15",
        cwd=tmp_path,
        timeout=840,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "launching 4 jobs through submitit_slurm (as one job array)" in result.stdout
    assert "warning: hydra.launcher.gpus_per_node" not in result.stdout

    tasks = {folder.name for folder in tmp_path.glob("multirun/verl-gpus/*/jobs/*_*") if folder.is_dir()}
    arrays = {task.split("_")[0] for task in tasks}
    assert len(tasks) == 4 and len(arrays) == 1, tasks
    array = arrays.pop()

    def accounted() -> str:
        """sacct's rows of the array once every task has ended there (its record lags the results)."""
        out = subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", array, "-o", "JobID,State,Partition,AllocTRES,Start,End"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        ended = [line for line in out.splitlines() if not line.endswith("|Unknown")]
        return out if len(ended) == len(tasks) else ""

    sacct = wait_for(accounted, 60, "sacct to record the end of every task")
    rows = [line.split("|") for line in sacct.splitlines()]
    assert sorted(row[0] for row in rows) == sorted(tasks), sacct
    intervals = []
    for _, state, partition_name, tres, start, end in rows:
        assert state == "COMPLETED" and partition_name == "gpu", sacct
        assert "gres/gpu=2" in tres.split(","), sacct
        intervals.append((datetime.fromisoformat(start), datetime.fromisoformat(end)))
    assert most_at_once(intervals) <= 2, sacct

    # verl is told what SLURM gave: 2 GPUs per node.
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    assert len(runs) == 4 and {run.data.params["trainer/n_gpus_per_node"] for run in runs} == {"2"}
