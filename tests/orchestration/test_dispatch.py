"""The pool's view of a local submitit job: ended once its result file is written."""

from __future__ import annotations

import atexit
import sys
import time

import cloudpickle
import submitit

from gaca.orchestration.dispatch import _finished_return, ended

SHUTDOWN_S = 4.0

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job cannot import the tests package


def answer_then_linger(value: int) -> int:
    """Returns at once; the job's interpreter then takes SHUTDOWN_S to exit (as torch and MLflow do)."""
    atexit.register(time.sleep, SHUTDOWN_S)
    return value


def test_a_local_job_has_ended_when_its_result_is_written(tmp_path):
    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="local")
    executor.update_parameters(timeout_min=2)
    job = executor.submit(answer_then_linger, 42)
    deadline = time.monotonic() + 60
    while not ended(job):
        assert time.monotonic() < deadline, "the job never wrote its result"
        time.sleep(0.05)
    seen = time.monotonic()
    assert not job.done(), "the process is still shutting down, so submitit's done() says no"
    assert _finished_return(job) == 42
    job.wait()
    assert time.monotonic() - seen > SHUTDOWN_S / 2  # what the pool no longer waits for
    assert job.results() == [42]


def test_no_result_file_means_not_finished(tmp_path):
    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="local")
    executor.update_parameters(timeout_min=2)
    job = executor.submit(time.sleep, 3)
    assert not ended(job) and _finished_return(job) is None
    job.wait()
    assert ended(job)
