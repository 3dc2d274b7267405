"""Real sweeps through the real CLI and Hydra's submitit_local launcher, on SQLite and on a real
`mlflow server`: nine concurrent jobs lose nothing, a sweep killed midway resumes to the same
results, and a failed run is reported with its traceback and log while the others finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gaca.compose.blocks import expand, load_block

from .conftest import (
    EVAL_STEPS,
    TINY,
    TRAIN_STEPS,
    LoggedRun,
    by_key,
    cli_env,
    gaca,
    logged_runs,
    mlflow_server,
    wait_for,
)

# One xdist worker takes the whole module, so that the reference sweep (module-scoped) is trained once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sweep_runs")]

DETECTOR_RUNS = len(expand(load_block("detector"), list(TINY)))
"""The detector block's runs (9 today), counted from its file so that a row added there keeps these true."""
NINE_AT_ONCE = ["detector", *TINY, f"hydra.sweeper.max_batch_size={DETECTOR_RUNS}"]
"""The detector block, every job started at once."""
PLACEMENT_PARAMS = ("tracking.uri", "output_dir")
"""Params that name where a run was logged or written, so differ between working folders."""


def sqlite_uri(folder: Path) -> str:
    return f"sqlite:///{folder / 'mlflow.db'}"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, dict[str, LoggedRun]]:
    """The detector block swept once, uninterrupted, into a fresh SQLite store, nine jobs at once."""
    folder = tmp_path_factory.mktemp("reference")
    result = gaca("sweep", *NINE_AT_ONCE, cwd=folder, timeout=900)
    return folder, result, by_key(logged_runs(sqlite_uri(folder)))


def results(run: LoggedRun) -> dict[str, list[tuple[int, float]]]:
    """Every metric point except timings."""
    return {name: points for name, points in run.history.items() if not name.startswith("perf/")}


def assert_complete(runs: dict[str, LoggedRun]) -> None:
    """Each run finished with every metric point of every step once, and all its params."""
    for key, run in runs.items():
        assert run.status == "FINISHED", key
        assert [step for step, _ in run.history["eval/success_rate"]] == EVAL_STEPS, key
        for name, points in run.history.items():
            if name.startswith(("train/", "loss/", "diag/", "perf/")):
                assert [step for step, _ in points] == TRAIN_STEPS, (key, name)
        assert [step for step, _ in run.history["final/eval_success_rate"]] == [TRAIN_STEPS[-1]], key
        assert run.params["trainer.iterations"] == "6"


def test_nine_concurrent_jobs_on_sqlite_lose_no_run_param_or_metric_point(reference):
    folder, result, runs = reference
    assert result.returncode == 0, result.stderr
    assert f"detector: {DETECTOR_RUNS} of {DETECTOR_RUNS} launched runs done, 0 failed" in result.stdout
    assert len(runs) == DETECTOR_RUNS
    assert_complete(runs)
    assert len({len(run.params) for run in runs.values()}) == 1  # no run lost a param
    assert f"launching {DETECTOR_RUNS} jobs through submitit_local (at most {DETECTOR_RUNS} at once)" in result.stdout
    assert {run.tags["gaca.block"] for run in runs.values()} == {"detector"}

    rerun = gaca("sweep", *NINE_AT_ONCE, cwd=folder)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("skip (done)") == DETECTOR_RUNS and "nothing to launch" in rerun.stdout
    assert set(by_key(logged_runs(sqlite_uri(folder)))) == set(runs)

    status = gaca("status", "detector", *TINY, cwd=folder)
    assert status.returncode == 0, status.stderr
    assert sum(line[:1].isdigit() and " done " in line for line in status.stdout.splitlines()) == DETECTOR_RUNS


def test_nine_concurrent_jobs_through_an_mlflow_server_log_what_sqlite_logged(reference, tmp_path):
    _, _, expected = reference
    with mlflow_server(tmp_path) as uri:
        result = gaca("sweep", *NINE_AT_ONCE, cwd=tmp_path, timeout=900, MLFLOW_TRACKING_URI=uri)
        assert result.returncode == 0, result.stderr
        assert f"MLflow {uri}" in result.stdout
        runs = by_key(logged_runs(uri))

    assert set(runs) == set(expected)
    assert_complete(runs)
    for key, run in runs.items():
        same = {k: v for k, v in run.params.items() if k not in PLACEMENT_PARAMS}
        assert same == {k: v for k, v in expected[key].params.items() if k not in PLACEMENT_PARAMS}
        assert results(run) == results(expected[key]), key


def test_a_sweep_killed_midway_resumes_without_duplicates_or_losses(reference, tmp_path):
    """SIGKILL of the driver and its jobs once a run has a checkpoint; the same command again."""
    _, _, expected = reference
    command = ["sweep", "detector", "seed=0", *TINY]
    driver = subprocess.Popen(
        [sys.executable, "-m", "gaca.cli", *command],
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: list(tmp_path.glob("runs/*/LATEST")), 600, "a first checkpoint", interval_s=0.1)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver, its submitit controllers and their jobs
        driver.wait()
    killed = by_key(logged_runs(sqlite_uri(tmp_path)))
    interrupted = {key for key, run in killed.items() if run.status == "RUNNING"}
    assert interrupted, "the kill came after every run had finished"

    rerun = gaca(*command, cwd=tmp_path)

    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("interrupted") >= len(interrupted)
    runs = by_key(logged_runs(sqlite_uri(tmp_path)))  # by_key fails on a duplicated run
    seed_0 = {key for key, run in expected.items() if run.params["seed"] == "0"}
    assert set(runs) == seed_0
    assert_complete(runs)
    for key in interrupted:
        assert runs[key].run_id == killed[key].run_id  # resumed into the same MLflow run
    for key, run in runs.items():
        assert results(run) == results(expected[key]), key
    job_logs = "".join(p.read_text() for p in tmp_path.glob("multirun/detector/*/jobs/*/*_log.err"))
    assert "gaca job: checkpoint" in job_logs and "/iter-0000" in job_logs  # resumed from a checkpoint


def test_ctrl_c_cancels_the_jobs_with_one_line_and_no_traceback(tmp_path):
    """SIGINT to the whole foreground process group, as a terminal's Ctrl-C sends it: the driver, its
    submitit controllers and their jobs. The terminal gets the driver's one line; what the
    controllers print on the way out goes to a log beside the jobs' logs."""
    # Long enough to be still running when the first checkpoint is seen, however late a loaded machine
    # lets this process look (under a full suite, 500 iterations once ended before it did).
    command = ["sweep", "detector", "seed=0", "algorithm.detector=entropy,uniform", *TINY, "trainer.iterations=5000"]
    err_path = tmp_path / "driver.err"
    with err_path.open("w") as err:
        driver = subprocess.Popen(
            [sys.executable, "-m", "gaca.cli", *command],
            cwd=tmp_path,
            env=cli_env(),
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        try:
            wait_for(lambda: list(tmp_path.glob("runs/*/LATEST")), 600, "a first checkpoint", interval_s=0.1)
            os.killpg(driver.pid, signal.SIGINT)
            code = driver.wait(timeout=120)
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
    printed = err_path.read_text()

    assert code == 130, printed
    assert "interrupted: 2 jobs cancelled" in printed
    assert "Traceback" not in printed and "KeyboardInterrupt" not in printed, printed
    controllers = list(tmp_path.glob("multirun/detector/*/jobs/controllers.err"))
    assert len(controllers) == 1


def test_a_failed_run_does_not_stop_the_others_and_is_reported_with_its_log(reference, tmp_path):
    folder, _, _ = reference
    block = tmp_path / "blocks" / "failing.yaml"
    block.parent.mkdir()
    block.write_text(
        "# @package _global_\n"
        "block: failing\n"
        "sweep:\n"
        "  - seed: 0\n"
        "    algorithm.detector: entropy,loo\n"  # entropy is done already; loo is new
        "  - seed: 0\n"
        "    model: path\n"
        f"    model.path: {tmp_path / 'no-such-model'}\n"
    )

    result = gaca("sweep", str(block), *TINY, cwd=folder)

    assert result.returncode == 1
    assert "skip (done)" in result.stdout and "failing: 1 of 2 launched runs done, 1 failed" in result.stdout
    summary = result.stderr[result.stderr.index("FAILED (1):") :]
    assert f"model.path={tmp_path / 'no-such-model'}" in summary
    assert "OSError" in summary and "Traceback" not in summary.splitlines()[-1]
    log = Path(summary.split("log: ")[1].split()[0])
    assert log.is_file() and "Traceback (most recent call last)" in log.read_text()
    assert "rerun the same command to retry them" in result.stderr
    runs = logged_runs(sqlite_uri(folder))
    loo = [run for run in runs if run.params.get("algorithm.detector") == "loo"]
    assert len(loo) == 1 and loo[0].status == "FINISHED" and loo[0].tags["gaca.block"] == "failing"
