"""`gaca train backend=verl_cpu`: verl-agent's own trainer, unmodified, end to end on this machine's CPUs
with the tiny policy on errand, checked against the tracking contract in MLflow: every estimator, a run
killed and rerun, and one job through the local SLURM cluster.

verl-agent is not on the package index: these tests need a checkout and its trainer environment,
``GACA_VERL_AGENT=<checkout>`` and ``GACA_VERL_PYTHON=<VENV>/bin/python`` from
``bash scripts/setup-verl-agent.sh <checkout> <VENV>``; without them they skip saying so.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gaca import contract

from ...orchestration.conftest import cli_env, gaca, wait_for

CHECKOUT = os.environ.get("GACA_VERL_AGENT")
PYTHON = os.environ.get("GACA_VERL_PYTHON")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHECKOUT and PYTHON),
        reason="set GACA_VERL_AGENT=<verl-agent checkout> and GACA_VERL_PYTHON=<VENV>/bin/python "
        "(bash scripts/setup-verl-agent.sh <checkout> <VENV>) to run verl-agent's trainer end to end",
    ),
]
ITERATIONS = 2
EVAL_TASKS, EPISODES = 2, 1
SMOKE = [
    "backend=verl_cpu",
    "trainer=quick",
    "trainer.init=scratch",
    f"trainer.iterations={ITERATIONS}",
    "trainer.tasks_per_iteration=2",
    "trainer.group_size=2",
    f"trainer.num_eval_tasks={EVAL_TASKS}",
    f"trainer.eval_episodes_per_task={EPISODES}",
    "trainer.eval_every=1",
    "trainer.checkpoint_every=1",
    "env.difficulty=easy",
    "env.horizon=8",
]
"""Two iterations of 2 tasks x 2 episodes, evaluated and checkpointed after each."""
ESTIMATOR_DIAGNOSTICS = {
    "gaca": [
        "diag/criticality_std",
        "diag/lambda_mean",
        "diag/lambda_std",
        "diag/clamp_frac",
        "diag/nonsingleton_frac",
    ],
    "gigpo": ["diag/nonsingleton_frac"],
    "grpo": [],
}


def trainer_env() -> dict[str, str]:
    return {"GACA_VERL_AGENT": CHECKOUT, "GACA_VERL_PYTHON": PYTHON}


def only_run(tmp_path: Path):
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    assert len(runs) == 1, [r.info.run_id for r in runs]
    return client, runs[0]


def steps(client: MlflowClient, run_id: str, name: str) -> list[int]:
    return sorted(m.step for m in client.get_metric_history(run_id, name))


def value_at(client: MlflowClient, run_id: str, name: str, step: int) -> float:
    (value,) = [m.value for m in client.get_metric_history(run_id, name) if m.step == step]
    return value


def assert_contract(client: MlflowClient, run, method: str, tmp_path: Path) -> None:
    run_id = run.info.run_id
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    assert tags[contract.TAG_BACKEND] == "verl" and tags[contract.TAG_METHOD] == method and tags[contract.TAG_RUN_KEY]
    assert run.data.params["trainer.iterations"] == str(ITERATIONS) and run.data.params["backend.device"] == "cpu"
    training = list(range(1, ITERATIONS + 1))
    for name in (
        *ESTIMATOR_DIAGNOSTICS[method],
        contract.TRAIN_SUCCESS_RATE,
        contract.TRAIN_RETURN_MEAN,
        contract.TRAIN_INVALID_ACTION_RATE,
        contract.LOSS_POLICY,
        contract.PERF_ITERATION_S,
        contract.DIAG_ZERO_ADV_FRAC,
        contract.DIAG_MIXED_GROUP_FRAC,
        contract.DIAG_LENGTH_FRAC,
        *([contract.DIAG_STEP_EPISODE_CORR] if method != "grpo" else []),
        *([contract.DIAG_C_LENGTH_CORR] if method == "gaca" else []),
    ):
        assert steps(client, run_id, name) == training, name
    # where each step's seconds went (gaca.backends.verl.agent.timing): the workers' own and the Ray round trips, all
    # inside the step verl timed
    parts = (
        contract.PERF_GENERATION_S,
        contract.PERF_ENV_S,
        contract.PERF_LOGPROB_S,
        contract.PERF_UPDATE_S,
        contract.PERF_RAY_S,
        contract.PERF_ESTIMATOR_S,
    )
    for name in parts:
        assert steps(client, run_id, name) == training, name
    for step in training:
        seconds = {name: value_at(client, run_id, name, step) for name in (*parts, contract.PERF_ITERATION_S)}
        assert all(seconds[name] > 0 for name in parts if name != contract.PERF_ESTIMATOR_S), seconds
        assert sum(seconds[name] for name in parts) < seconds[contract.PERF_ITERATION_S], seconds
    # the return counts the invalid-action penalty, as the CPU backend's does (the untrained policy's actions
    # are mostly inadmissible: -0.1 each)
    invalid = [m.value for m in client.get_metric_history(run_id, contract.TRAIN_INVALID_ACTION_RATE)]
    returns = [m.value for m in client.get_metric_history(run_id, contract.TRAIN_RETURN_MEAN)]
    assert all(0 <= rate <= 1 for rate in invalid)
    assert any(rate > 0 for rate in invalid) and min(returns) < 0
    evaluations = list(range(0, ITERATIONS + 1))
    assert steps(client, run_id, contract.EVAL_SUCCESS_RATE) == evaluations
    assert steps(client, run_id, contract.EVAL_RETURN_MEAN) == evaluations
    last = client.get_metric_history(run_id, contract.EVAL_SUCCESS_RATE)[-1].value
    assert run.data.metrics[contract.FINAL_EVAL_SUCCESS_RATE] == pytest.approx(last)
    artifacts = Path(client.download_artifacts(run_id, "", str(tmp_path / f"artifacts-{method}")))
    for step in evaluations:
        rows = list(csv.DictReader((artifacts / contract.outcomes_artifact(step)).read_text().splitlines()))
        assert len(rows) == EVAL_TASKS * EPISODES and {r["iteration"] for r in rows} == {str(step)}
        assert [int(r["task_id"]) for r in rows] == [task for task in range(EVAL_TASKS) for _ in range(EPISODES)]
    histogram = artifacts / contract.CRITICALITY_HISTOGRAM
    if method == "gaca":
        counts = [int(r["count"]) for r in csv.DictReader(histogram.read_text().splitlines())]
        assert len(counts) == len(contract.CRITICALITY_BINS) - 1 and sum(counts) > 0
    else:
        assert not histogram.exists()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("method", ["gaca", "gigpo", "grpo"])
def test_verl_agents_trainer_keeps_the_tracking_contract(tmp_path: Path, method: str):
    done = gaca("train", *SMOKE, f"algorithm={method}", cwd=tmp_path, timeout=840, **trainer_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    client, run = only_run(tmp_path)
    assert_contract(client, run, method, tmp_path)


@pytest.mark.timeout(1200)
def test_a_killed_verl_run_resumes_into_the_same_mlflow_run_from_its_checkpoint(tmp_path: Path):
    overrides = [*SMOKE, "trainer.iterations=3", "algorithm=gaca"]
    process = subprocess.Popen(
        [sys.executable, "-m", "gaca.cli", "train", *overrides],
        cwd=tmp_path,
        env=cli_env(**trainer_env()),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # Ctrl-C reaches it
    try:
        marker = lambda: next(tmp_path.glob("runs/*/verl/latest_checkpointed_iteration.txt"), None)  # noqa: E731
        wait_for(
            lambda: marker() is not None and marker().read_text().strip() == "1", 600, "the step-1 checkpoint", 1.0
        )
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the job stops the trainer's process group
        process.wait(120)
    client, run = only_run(tmp_path)
    assert run.info.status == "KILLED"
    done = gaca("train", *overrides, cwd=tmp_path, timeout=840, **trainer_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Setting global step to" in done.stdout + done.stderr  # verl resumed from its checkpoint
    client, resumed = only_run(tmp_path)
    assert resumed.info.run_id == run.info.run_id and resumed.info.status == "FINISHED"
    assert steps(client, run.info.run_id, "diag/criticality_std")[-1] == 3


@pytest.mark.slurm
@pytest.mark.timeout(1200)
def test_a_verl_cpu_job_goes_through_the_local_slurm_cluster(tmp_path: Path):
    block = tmp_path / "blocks" / "verl-cpu.yaml"
    block.parent.mkdir()
    block.write_text("# @package _global_\nblock: verl-cpu\nsweep:\n  - seed: 0\n")
    done = gaca(
        "sweep",
        str(block),
        *SMOKE,
        "algorithm=gaca",
        "launcher=slurm",
        "hydra.launcher.mem_gb=12",
        "hydra.launcher.cpus_per_task=2",
        "hydra.launcher.timeout_min=20",
        cwd=tmp_path,
        timeout=1140,
        **trainer_env(),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    client, run = only_run(tmp_path)
    assert run.data.tags[contract.TAG_BLOCK] == "verl-cpu"
    assert_contract(client, run, "gaca", tmp_path)
