"""Progress inside runs: a job's log has a line per iteration, the sweep driver reads it back, and
without a terminal the driver's heartbeat gives iterations over all runs with an ETA."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gaca.orchestration.display import HEARTBEAT_S, Progress, last_iteration, makespan

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
    clock = [0.0]
    stream = io.StringIO()
    progress = Progress(runs=3, iterations=75, stream=stream, now=lambda: clock[0])
    clock[0] = 3600.0  # an hour of cloning before the first iterations
    progress.tick(running=2, queued=1, iterations_done=2)
    clock[0] += 60  # and 10 iterations in the minute since
    progress.tick(running=2, queued=1, iterations_done=12)
    progress.close()
    assert "12/75 iterations (16%), ETA 06:18" in stream.getvalue()  # 63 left at 6 s each, not hours


def test_the_eta_runs_the_queued_runs_in_the_slots_that_free_at_one_jobs_pace():
    """Three runs of 40 iterations two at a time (the first command): the third runs alone at the end,
    at one job's pace, where the sweep's pace since the start would say it runs at two jobs'."""
    clock = [0.0]
    stream = io.StringIO()
    progress = Progress(runs=3, iterations=120, stream=stream, slots=2, now=lambda: clock[0])
    progress.tick(running=2, queued=1, iterations_done=0, left=([40, 40], [40]))
    clock[0] = 180.0  # the clone
    progress.tick(running=2, queued=1, iterations_done=2, left=([39, 39], [40]))
    assert progress.eta() == "ETA once iterations are timed"  # not 118 x 90 s from the pace since the start
    clock[0] = 300.0  # 24 iterations in 240 job-seconds: 10 s an iteration a job
    progress.tick(running=2, queued=1, iterations_done=26, left=([27, 27], [40]))
    assert progress.eta() == "ETA 11:10"  # 270 s for the two running, then 400 s for the queued one
    clock[0] = 570.0  # both end; the queued run starts
    progress.tick(running=2, queued=1, iterations_done=80, left=([0, 0], [40]))
    clock[0] = 600.0
    progress.tick(running=1, queued=0, iterations_done=83, left=([37], []))  # the last run, alone
    # 840 job-seconds over 81 iterations: 37 left at 10.4 s (the sweep's pace since the first iterations
    # would say 37 at 5.2 s: half the time, as if the lone job had both slots)
    assert progress.eta() == "ETA 06:23"
    assert makespan([], [], 2, 10.0) == 0.0 and makespan([5], [5, 5, 5], None) == 5.0
    progress.close()


def test_a_resumed_runs_checkpointed_iterations_do_not_count_toward_the_pace():
    clock = [0.0]
    progress = Progress(runs=2, iterations=80, stream=io.StringIO(), slots=2, now=lambda: clock[0])
    progress.tick(running=1, queued=1, iterations_done=2, left=([38], [40]), trained=2)
    clock[0] = 60.0  # 6 more at 10 s; the second run resumes from its checkpoint at iteration 30, seen at 31
    progress.tick(running=2, queued=0, iterations_done=39, left=([32, 9], []), trained=8)
    assert progress.eta() == "ETA 05:20"  # 32 left at 10 s, not at 60 s / 37 iterations
    progress.close()


def test_a_log_without_iteration_lines_reads_as_zero(tmp_path: Path):
    (tmp_path / "log").write_text("gaca job: checkpoint found\n")
    assert last_iteration(tmp_path / "log") == 0 and last_iteration(tmp_path / "missing") == 0


def test_a_job_building_its_start_says_so_until_its_first_iteration(tmp_path: Path):
    from gaca.orchestration.display import starting_now

    log = tmp_path / "job_log.err"
    log.write_text("gaca train: building the starting policy: 2048 demonstrations, 500 cloning updates\n")
    assert starting_now(log) is None
    log.write_text(log.read_text() + "gaca train: starting policy: cloning 50/500 updates\n")
    log.write_text(log.read_text() + "gaca train: starting policy: cloning 300/500 updates\n")
    assert starting_now(log) == "cloning 300/500 updates"
    log.write_text(log.read_text() + "gaca train: iteration 1/40  success 0.30\n")
    assert starting_now(log) is None
    assert starting_now(tmp_path / "missing.err") is None

    stream = io.StringIO()
    progress = Progress(runs=3, iterations=120, stream=stream)
    progress.last_line -= HEARTBEAT_S + 1
    progress.tick(running=2, queued=1, iterations_done=0, starting=["seed=0: starting policy, cloning 300/500 updates"])
    progress.close()
    line = stream.getvalue().splitlines()[-1]
    assert "0/120 iterations (0%), ETA once iterations are timed" in line
    assert line.endswith("; seed=0: starting policy, cloning 300/500 updates")
