"""The pool's view of a local submitit job: ended once its result file is written."""

from __future__ import annotations

import atexit
import os
import sys
import time

import cloudpickle
import submitit

from gaca.orchestration.dispatch import _finished_return, ended

LINGER_S = 60.0

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job cannot import the tests package


def answer_then_linger(value: int) -> int:
    """Returns at once; the job's interpreter then takes LINGER_S to exit (torch and MLflow take seconds)."""
    atexit.register(time.sleep, LINGER_S)
    return value


def local_executor(folder):
    executor = submitit.AutoExecutor(folder=folder / "%j", cluster="local")
    executor.update_parameters(timeout_min=2)
    return executor


def test_a_local_job_has_ended_when_its_result_is_written(tmp_path):
    submitted = time.time()
    job = local_executor(tmp_path).submit(answer_then_linger, 42)
    try:
        deadline = time.monotonic() + 60
        while not ended(job, submitted):
            assert time.monotonic() < deadline, "the job never wrote its result"
            time.sleep(0.05)
        assert not job.done(), "its interpreter is still shutting down, so submitit's done() says no"
        assert _finished_return(job, submitted) == 42
    finally:
        job.cancel(check=False)


def test_a_result_file_older_than_the_submission_is_not_this_jobs(tmp_path):
    submitted = time.time()
    job = local_executor(tmp_path).submit(time.sleep, 30)
    try:
        result = job.paths.result_pickle
        result.parent.mkdir(parents=True, exist_ok=True)
        cloudpickle.dump(("success", 7), result.open("wb"))  # left by an earlier job with the same pid
        os.utime(result, (submitted - 60, submitted - 60))
        assert not ended(job, submitted) and _finished_return(job, submitted) is None
        os.utime(result, None)
        assert ended(job, submitted) and _finished_return(job, submitted) == 7
    finally:
        job.cancel(check=False)
