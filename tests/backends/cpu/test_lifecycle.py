"""One rule for how a run ends in MLflow, shared by the CPU trainer and the verl job wrapper."""

import pytest

from gaca.backends.lifecycle import Stopped, end_status, finishing


class Logger:
    status = None

    def finish(self, status):
        self.status = status


@pytest.mark.parametrize(
    "error, status",
    [
        (KeyboardInterrupt(), "KILLED"),  # Ctrl-C: resumed by the next run
        (SystemExit(-1), "KILLED"),  # a preemption: submitit requeues the job, then exits
        (Stopped("after iteration 2"), "KILLED"),  # the trainer's simulated preemption
        (ValueError("a bug"), "FAILED"),
        (RuntimeError("the verl trainer exited with status 1"), "FAILED"),
    ],
)
def test_a_stopped_run_is_killed_and_a_broken_one_failed(error, status):
    logger = Logger()
    with pytest.raises(type(error)), finishing(logger):
        raise error
    assert logger.status == status == end_status(error)


def test_a_run_that_completes_is_finished():
    logger = Logger()
    with finishing(logger):
        pass
    assert logger.status == "FINISHED"
