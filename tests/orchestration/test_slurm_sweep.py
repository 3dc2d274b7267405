"""A small block through the real local SLURM cluster with `launcher=slurm`: one job array in
which a run fails (its traceback reaches the summary), a job is cancelled, and a job preempted
mid-run is requeued and resumes from its checkpoint into the same MLflow run."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import TINY, by_key, cli_env, logged_runs, wait_for

SETTINGS = [override for override in TINY if not override.startswith("trainer.iterations=")]
"""The tiny settings, iterations left to the block's grid (a command-line override would replace it)."""

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

LONG = 300
"""Iterations of the preempted run: still running when its signals land (slurmctld may refuse them for
seconds, see ``preempt``), and it must then finish all of them after its requeue."""

ENDLESS = 100_000
"""Iterations of the cancelled run: it cannot finish on its own before the cancel lands (in CI a run of
100 iterations did, at well under 0.1 s per iteration)."""


def block_file(folder: Path) -> Path:
    """Cancelled (seed 1) and preempted (seed 2) runs first, so that they hold the two cores first."""
    path = folder / "blocks" / "slurm-e2e.yaml"
    path.parent.mkdir()
    path.write_text(
        "# @package _global_\n"
        "block: slurm-e2e\n"
        "sweep:\n"
        "  - seed: 1\n"
        f"    trainer.iterations: {ENDLESS}\n"
        "  - seed: 2\n"
        f"    trainer.iterations: {LONG}\n"
        "  - seed: 0\n"
        "    trainer.iterations: 6\n"
        "  - seed: 0\n"
        "    trainer.iterations: 6\n"
        "    model: path\n"
        f"    model.path: {folder / 'no-such-model'}\n"
    )
    return path


def planned_keys(stdout: str) -> dict[str, str]:
    """Run label -> run key, from the driver's table (#, block, run key, state, run)."""
    rows = [re.split(r"\s{2,}", line.strip()) for line in stdout.splitlines() if line[:1].isdigit()]
    return {row[4]: row[2] for row in rows}


def squeue(array: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", array, "-o", "%i %T"], capture_output=True, text=True).stdout


def running(array: str) -> set[str]:
    """The array's tasks that SLURM shows RUNNING (ids like 44_1)."""
    return {line.split()[0] for line in squeue(array).splitlines() if line.split()[1:] == ["RUNNING"]}


def cancel(task: str) -> None:
    """scancel, repeated until the task has left RUNNING (see ``preempt`` on slurmctld's refusals)."""
    while task in running(task.split("_")[0]):
        try:
            subprocess.run(["scancel", task], capture_output=True, timeout=3)
        except subprocess.TimeoutExpired:
            pass
        time.sleep(0.5)


def preempt(task: str, folder: Path) -> None:
    """What SLURM does to a preempted job with a grace time: SIGTERM, then submitit's USR2 (checkpoint
    and requeue). slurmctld answers some signals to a running array task with "Job can not be altered
    now, try again later" although slurmd delivers them, and scancel then blocks in its own retries;
    so each signal is sent until the job's log shows that submitit received it."""

    def logs() -> str:
        return "".join(p.read_text() for p in folder.glob(f"multirun/*/*/jobs/{task}/*_log.*"))

    for signal_name, received in [("SIGTERM", "Bypassing signal SIGTERM"), ("USR2", "Caught signal SIGUSR2")]:
        deadline = time.monotonic() + 60
        while received not in logs():
            assert time.monotonic() < deadline, f"{task} never received {signal_name}"
            assert task in running(task.split("_")[0]), f"{task} ended before it received {signal_name}"
            try:
                subprocess.run(["scancel", task, "--signal", signal_name], capture_output=True, timeout=3)
            except subprocess.TimeoutExpired:
                pass
            waited = time.monotonic() + 2
            while received not in logs() and time.monotonic() < waited:
                time.sleep(0.1)


def array_id(name: str) -> str:
    """The array's base job id (%F: one value for every task; %A differs per started task, so it only
    worked while SLURM had started none of them; in CI it started two within 20 ms of the submission)."""
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%F"], capture_output=True, text=True, check=True).stdout
    ids = set(out.split())
    return ids.pop() if len(ids) == 1 else ""


@pytest.mark.timeout(600)
def test_a_block_on_slurm_fails_cancels_and_resumes_a_preempted_job(tmp_path: Path):
    out_path, err_path = tmp_path / "driver.out", tmp_path / "driver.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        driver = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gaca.cli",
                "sweep",
                str(block_file(tmp_path)),
                *SETTINGS,
                "launcher=slurm",
                "hydra.launcher.mem_gb=1",
                "hydra.launcher.timeout_min=10",
                "hydra.launcher.array_parallelism=4",
            ],
            cwd=tmp_path,
            env=cli_env(),
            stdout=out,
            stderr=err,
        )
        try:
            wait_for(lambda: "launching 4 jobs" in out_path.read_text(), 300, "the driver to launch")
            keys = planned_keys(out_path.read_text())
            cancelled = keys[f"seed=1 trainer.iterations={ENDLESS}"]
            preempted = keys[f"seed=2 trainer.iterations={LONG}"]
            array = wait_for(lambda: array_id("gaca-slurm-e2e"), 60, "the job array in squeue")
            # One array, tasks in plan order: 0 cancelled, 1 preempted, 2 fine, 3 failing. Each long
            # run is acted on as soon as it has a checkpoint, in whichever order the two start: one
            # that started first must not finish while the test waits for the other.
            actions = {
                cancelled: lambda: cancel(f"{array}_0"),
                preempted: lambda: preempt(f"{array}_1", tmp_path),
            }

            def act_on_checkpointed() -> bool:
                for key in [key for key in actions if (tmp_path / "runs" / key / "LATEST").exists()]:
                    assert f"{array}_{0 if key == cancelled else 1}" in running(array), (key, squeue(array))
                    actions.pop(key)()
                return not actions

            wait_for(act_on_checkpointed, 300, "checkpoints of the runs to cancel and to preempt")
            code = driver.wait(timeout=480)
        finally:
            if driver.poll() is None:
                driver.send_signal(signal.SIGINT)  # the driver cancels its jobs
                driver.wait(timeout=60)
    stdout, stderr = out_path.read_text(), err_path.read_text()

    assert code == 1, stderr
    assert "slurm-e2e: 2 of 4 launched runs done, 2 failed" in stdout
    summary = stderr[stderr.index("FAILED (2):") :]
    assert "OSError" in summary and "no-such-model" in summary  # the failing run, with its traceback
    assert "CANCELLED" in summary  # the cancelled job
    assert summary.count("log: ") == 2
    runs = by_key(logged_runs(f"sqlite:///{tmp_path / 'mlflow.db'}"))  # one MLflow run per key
    assert runs[cancelled].status != "FINISHED"
    resumed = runs[preempted]
    assert resumed.status == "FINISHED"
    assert [step for step, _ in resumed.history["train/success_rate"]] == list(range(1, LONG + 1))
    logs = "".join(p.read_text() for p in tmp_path.glob(f"multirun/slurm-e2e/*/jobs/{array}_1/*_log.*"))
    assert "gaca job: checkpoint" in logs  # the requeued job found its checkpoint
    sacct = subprocess.run(
        ["sacct", "-n", "-X", "-D", "-j", f"{array}_1", "-o", "State"], capture_output=True, text=True, check=True
    )
    assert "REQUEUED" in sacct.stdout or "PREEMPTED" in sacct.stdout, sacct.stdout
