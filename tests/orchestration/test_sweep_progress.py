"""Progress inside runs: a job's log has a line per iteration, the sweep driver reads it back, and
without a terminal the driver's heartbeat gives iterations over all runs with an ETA."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gaca.orchestration.display import HEARTBEAT_S, Progress, last_iteration

from .conftest import TINY, gaca

pytestmark = pytest.mark.slow


def test_a_sweep_jobs_log_has_a_line_per_iteration_that_the_driver_reads_back(tmp_path: Path):
    result = gaca("sweep", "detector", "seed=0", "algorithm.detector=entropy", *TINY, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (log,) = tmp_path.glob("multirun/**/*_log.err")
    text = log.read_text()
    for iteration in range(1, 7):
        assert f"gaca train: iteration {iteration}/6  success " in text
    assert last_iteration(log) == 6
    assert "INFO mlflow" not in text and "Loading weights" not in text  # third-party noise filtered


def test_without_a_terminal_the_heartbeat_gives_iterations_over_all_runs_and_an_eta():
    stream = io.StringIO()
    progress = Progress(runs=3, iterations=75, stream=stream)
    progress.event("seed=0 (final eval success 0.500, 01:00)", ok=True)
    progress.last_line -= HEARTBEAT_S + 1  # as if the last line were older than the heartbeat
    progress.tick(running=2, queued=0, iterations_done=30)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert "done   1/3  seed=0" in lines[0]
    assert "30/75 iterations (40%), ETA " in lines[1] and "1 runs done, 0 failed, 2 running, 0 queued" in lines[1]


def test_the_eta_reads_the_pace_since_the_first_iterations_not_the_cloning_before_them():
    stream = io.StringIO()
    progress = Progress(runs=3, iterations=75, stream=stream)
    progress.tick(running=2, queued=1, iterations_done=2)
    progress.began -= 3600  # an hour of cloning before the first iterations
    seen, before = progress.first_seen
    progress.first_seen = (seen - 60, before)  # and 10 iterations in the minute since
    progress.last_line -= HEARTBEAT_S + 1
    progress.tick(running=2, queued=1, iterations_done=12)
    progress.close()
    assert "12/75 iterations (16%), ETA 06:1" in stream.getvalue()  # 63 left at 6 s each, not hours


def test_a_log_without_iteration_lines_reads_as_zero(tmp_path: Path):
    (tmp_path / "log").write_text("gaca job: checkpoint found\n")
    assert last_iteration(tmp_path / "log") == 0 and last_iteration(tmp_path / "missing") == 0
