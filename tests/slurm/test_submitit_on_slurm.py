"""submitit against the real local SLURM cluster: arrays, failures, cancellation, preemption and requeue.

Each test waits on real jobs, so each is bounded by pytest-timeout and by its own polling deadlines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cloudpickle
import pytest
import submitit
from submitit.core.utils import FailedJobError, UncompletedJobError
from submitit.slurm.slurm import SlurmJobEnvironment

pytestmark = pytest.mark.slurm

# pytest imports this file under a name that the job's interpreter cannot import, so the job
# functions below must travel inside the pickle rather than as a reference to this module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.5)


# ---------------------------------------------------------------- job functions (run on the cluster)


def square_with_task_id(x: int) -> tuple[int, int]:
    return x * x, int(os.environ["SLURM_ARRAY_TASK_ID"])


def fail_loudly(code: int) -> None:
    raise ValueError(f"deliberate failure {code}")


def sleep_after_marking(marker: Path, seconds: float) -> None:
    marker.touch()
    time.sleep(seconds)


class ResumableCounter(submitit.helpers.Checkpointable):
    """Counts to `target`, saving the count to `workdir/count` after every step like a training
    loop saving checkpoints; a fresh start stops at `pause_at` and waits to be preempted.

    `Checkpointable.checkpoint` resubmits the same call, so all resume state lives in the file.
    """

    def __call__(self, workdir: Path, target: int, pause_at: int) -> dict[str, int]:
        state_file = workdir / "count"
        count = int(state_file.read_text()) if state_file.exists() else 0
        resumed_from = count
        while count < target:
            if count == pause_at and resumed_from == 0:
                (workdir / "paused").touch()
                time.sleep(120)  # the test preempts the job here
            count += 1
            state_file.write_text(str(count))
        return {
            "resumed_from": resumed_from,
            "count": count,
            "restarts": int(os.environ.get("SLURM_RESTART_COUNT", "0")),
        }


# ---------------------------------------------------------------- tests


@pytest.mark.timeout(60)
def test_array_job_returns_every_result(slurm_executor: submitit.AutoExecutor) -> None:
    slurm_executor.update_parameters(name="gaca-test-array", slurm_array_parallelism=4)
    jobs = slurm_executor.map_array(square_with_task_id, [0, 1, 2, 3])

    assert len({job.job_id.split("_")[0] for job in jobs}) == 1, "expected one SLURM array job"
    assert [job.result() for job in jobs] == [(0, 0), (1, 1), (4, 2), (9, 3)]


@pytest.mark.timeout(60)
def test_failing_job_raises_with_the_remote_traceback(slurm_executor: submitit.AutoExecutor) -> None:
    slurm_executor.update_parameters(name="gaca-test-failure")
    job = slurm_executor.submit(fail_loudly, 42)

    with pytest.raises(FailedJobError) as raised:
        job.result()

    message = str(raised.value)
    assert "ValueError: deliberate failure 42" in message
    assert "fail_loudly" in message  # the remote frame, not just the message


@pytest.mark.timeout(90)
def test_cancelled_job_ends_cancelled(slurm_executor: submitit.AutoExecutor, tmp_path: Path) -> None:
    slurm_executor.update_parameters(name="gaca-test-cancel")
    marker = tmp_path / "started"
    job = slurm_executor.submit(sleep_after_marking, marker, 600)
    wait_until(marker.exists, 60, "the job to start")

    job.cancel()

    # done() falls back on sacct when no result file exists; without accounting it never turns True.
    wait_until(lambda: job.done(force_check=True), 60, "SLURM to report the cancelled job as finished")
    assert job.state.startswith("CANCELLED")
    with pytest.raises(UncompletedJobError, match="has not produced any output"):
        job.result()  # gives up after submitit's 15 s grace period for the result file


def _logs(job: submitit.Job) -> str:
    """What the job has written to its stdout and stderr so far."""
    return "".join(text or "" for text in (job.stdout(), job.stderr()))


@pytest.mark.timeout(300)  # a bound against a hang, not a speed: a requeued job waits for the scheduler's next pass
def test_preempted_checkpointable_job_resumes_from_its_checkpoint(
    slurm_executor: submitit.AutoExecutor, tmp_path: Path
) -> None:
    slurm_executor.update_parameters(name="gaca-test-requeue")
    workdir = tmp_path / "counter"
    workdir.mkdir()
    job = slurm_executor.submit(ResumableCounter(), workdir, 10, 4)
    wait_until((workdir / "paused").exists, 60, "the job to reach its pause point")

    # What a preemption looks like to the job: SIGTERM then USR2 to the srun step. submitit's
    # handler pickles checkpoint()'s resubmission and calls `scontrol requeue`. The USR2 goes once the
    # job has taken the SIGTERM: sent back to back (submitit's job._interrupt), a SIGTERM delivered late
    # on a loaded node kills the `scontrol requeue` that the USR2 handler has started.
    subprocess.check_call(["scancel", job.job_id, "--signal", "SIGTERM"])
    wait_until(lambda: "Bypassing signal SIGTERM" in _logs(job), 60, "the job to take the SIGTERM")
    subprocess.check_call(["scancel", job.job_id, "--signal", SlurmJobEnvironment.USR_SIG])

    assert job.result() == {"resumed_from": 4, "count": 10, "restarts": 1}
