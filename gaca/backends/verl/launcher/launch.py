"""The job wrapper of ``backend=verl``: one verl training process, tied to the project's MLflow run.

1. As the CPU trainer does, it looks the run up by ``gaca.run_key``: a FINISHED run is skipped; an
   unfinished one is resumed into the same MLflow run (verl resumes from its own checkpoint under
   ``runs/<run_key>/verl``).
   Before that it checks that the trainer can start on this machine (``gaca.backends.verl.launcher.preflight``):
   a missing checkout or Python is one line, and no MLflow run is made.
2. Otherwise it creates the MLflow run with the contract's tags and params and ``config.yaml``.
3. It starts the trainer with ``MLFLOW_RUN_ID`` set to that run: verl's MLflow logger
   (``trainer.logger=[console,mlflow]``) then resumes it instead of creating its own.
   With gaca's environments it first exports the starting policy and writes the task files.
4. When the trainer exits, it copies verl's metrics to the contract's names, logs
   ``final/eval_success_rate`` and sets the run's status itself: MLflow ends the trainer's active
   run as FINISHED at interpreter exit even when the trainer failed. The per-step criticality counts
   the hooks wrote are summed into ``contract.CRITICALITY_HISTOGRAM``.

Preemption (SLURM, through submitit) and Ctrl-C reach this process; it stops the trainer's process
group, marks the run KILLED and lets the requeued job resume it (``gaca.backends.lifecycle``, the
CPU trainer's rule too).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from gaca.backends.config import RunConfig
from gaca.backends.lifecycle import finishing, open_or_skip
from gaca.backends.result import TrainResult
from gaca.backends.verl.launcher.job import VerlJob, build_job, launcher_gpus_per_node, runs_on_cpu, served_files
from gaca.backends.verl.launcher.metrics import publish_contract_metrics
from gaca.backends.verl.launcher.run_options import verl_environment
from gaca.contract import CRITICALITY_HISTOGRAM, FINAL_EVAL_SUCCESS_RATE

STOP_GRACE_S = 30.0
"""Seconds the trainer gets to exit after SIGTERM before SIGKILL."""
FINAL_METRIC = FINAL_EVAL_SUCCESS_RATE


class TrainerFailed(RuntimeError):
    """The verl trainer exited with a non-zero status."""


def launch(run: RunConfig, resolved: dict[str, Any]) -> TrainResult:
    """Train ``run`` (a validated ``backend=verl`` config) as a verl job; ``resolved`` is the plain
    config it was built from (for the run key and the params)."""
    from mlflow.tracking import MlflowClient

    from gaca.backends.cpu.loop import histogram_csv
    from gaca.backends.verl.agent.hooks import criticality_histogram
    from gaca.backends.verl.launcher.preflight import check_trainer
    from gaca.tracking.identity import run_key
    from gaca.tracking.store import resolve_tracking_uri

    cpu, gpus = runs_on_cpu(run), launcher_gpus_per_node()
    check_trainer(run, build_job(run, run_key(resolved), resolve_tracking_uri(run.tracking.uri), None, gpus, cpu))
    opened = open_or_skip(run, resolved)
    if isinstance(opened, TrainResult):
        return opened
    key, logger = opened.key, opened.logger
    files = served_files(run, key)
    with finishing(logger):
        job = build_job(run, key, opened.uri, logger.run_id, gpus, cpu)
        if verl_environment(run) == "gaca":
            prepare_served(run, key)
        logger.log_text(job.shell() + "\n", "verl/command.sh")
        print(
            f"gaca job: verl trainer for run {key} (MLflow run {logger.run_id}):\n{job.shell()}",
            file=sys.stderr,
            flush=True,
        )
        code = run_trainer(job)
        if code != 0:
            raise TrainerFailed(
                f"the verl trainer exited with status {code} (run {key}); its output is in this job's log"
            )
        published = publish_contract_metrics(
            MlflowClient(tracking_uri=opened.uri), logger.run_id, run.trainer.iterations
        )
        if published.final is None:
            print(f"gaca job: {FINAL_METRIC} not logged: {published.missing_final}", file=sys.stderr, flush=True)
        else:
            logger.log_metrics({FINAL_METRIC: published.final}, step=run.trainer.iterations)
        histogram = criticality_histogram(str(files.output), run.trainer.iterations)
        if histogram is not None:
            logger.log_text(histogram_csv(histogram), CRITICALITY_HISTOGRAM)
    return TrainResult(logger.run_id, key, published.final, curve=published.curve)


def prepare_served(run: RunConfig, key: str) -> None:
    """What a job with gaca's environments makes before the trainer starts: the starting policy
    (model tiny or small) and the task files (one batch of training and of validation rows)."""
    from gaca.backends.verl.launcher.policy_export import export_starting_policy
    from gaca.backends.verl.launcher.task_files import write_task_files

    files = served_files(run, key)
    if run.model.name != "path":
        export_starting_policy(run, files.policy)
    trainer = run.trainer
    evaluation = (trainer.num_eval_tasks or run.env.num_eval_tasks) * trainer.eval_episodes_per_task
    write_task_files(files.data, trainer.tasks_per_iteration, evaluation)


def run_trainer(job: VerlJob) -> int:
    """Run the trainer to its end (its output goes to this job's stdout and stderr); its exit status.

    It gets its own process group, so that stopping it also stops what it started (Ray, vLLM).
    """
    process = subprocess.Popen(
        job.argv, cwd=job.cwd, env={**os.environ, **job.env}, start_new_session=True, preexec_fn=job.raise_limits
    )
    try:
        return process.wait()
    except BaseException:
        stop(process)
        raise


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the trainer's process group, SIGKILL after ``STOP_GRACE_S``."""
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
