"""backend=verl runs dispatched by `gaca sweep ... launcher=slurm` through the real single-node SLURM
cluster: one job array, each job the real job wrapper, the trainer process the CPU stand-in (the
only part that needs a GPU). Both runs end FINISHED in MLflow as the tracking contract says."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from .conftest import gaca, standin_overrides

pytestmark = [pytest.mark.slurm, pytest.mark.verl, pytest.mark.slow]
pytest.importorskip("verl", reason="the stand-in logs through verl's own MLflow logger")


def block_file(folder: Path) -> Path:
    path = folder / "blocks" / "verl-e2e.yaml"
    path.parent.mkdir()
    path.write_text(
        "# @package _global_\n"
        "block: verl-e2e\n"
        "sweep:\n"
        "  - seed: 0\n"
        "    env: household,shop\n"
    )
    return path


@pytest.mark.timeout(900)
def test_verl_runs_go_through_slurm_and_land_in_mlflow_like_any_other_run(tmp_path: Path):
    result = gaca(
        "sweep", str(block_file(tmp_path)),
        *[o for o in standin_overrides(iterations=3, eval_every=2) if not o.startswith("env=")],  # the grid's envs
        "algorithm=gaca",
        "launcher=slurm", "hydra.launcher.mem_gb=3", "hydra.launcher.timeout_min=15", cwd=tmp_path, timeout=840,
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
