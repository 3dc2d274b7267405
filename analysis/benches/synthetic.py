"""Runs logged with known values, following the tracking contract, for the tests and the benchmark.

Each ``SyntheticRun`` is written through the ordinary MLflow client exactly as a training run
would be (``gaca.contract``: the composed config's tags, run key and flattened params, per-iteration
metrics, evaluation outcome files, criticality histogram, terminal status), with the final success
and the diagnostics chosen by the caller.
"""

from __future__ import annotations

import copy
import functools
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from gaca import contract
from gaca.contract import flatten, set_dotted
from gaca.estimators.registry import ESTIMATORS
from gaca.tracking.identity import run_key

TRAIN_METRICS = tuple(name for name in contract.METRICS if name.split("/")[0] in ("train", "loss", "perf"))
DIAGNOSTICS = dict(zip(contract.DIAGNOSTIC_METRICS, (0.30, 0.4995, 0.075, 0.002, 0.85)))
"""A GACA run's diagnostics unless the caller gives others (the paper's ALFWorld values)."""
HISTOGRAM_BINS = contract.CRITICALITY_BINS[:-1]
BATCH = 1000  # MLflow's limit of metrics per log_batch


@functools.cache
def composed(env: str, scale: str, preset: str) -> dict[str, object]:
    """``conf/train.yaml`` composed with ``env``, ``model=scale`` and ``trainer=preset``, as plain data."""
    from gaca.compose import compose, resolve

    return resolve(compose([f"env={env}", f"model={scale}", f"trainer={preset}"]))


@dataclass(frozen=True)
class SyntheticRun:
    """One run to log; every field has the contract's meaning."""

    method: str = "gaca"
    env: str = "household"
    scale: str = "tiny"
    seed: int = 0
    overrides: Mapping[str, object] = field(default_factory=dict)
    """Config params that differ from the composed config (dotted keys, e.g. ``algorithm.lambda0``)."""
    final_success: float | None = 0.5
    """``final/eval_success_rate``; None: the metric is not logged."""
    eval_curve: Sequence[float] | None = None
    """``eval/success_rate`` at iterations 0, eval_every, ...; default: a ramp ending at final_success."""
    status: str = "FINISHED"
    block: str = "adhoc"
    iterations: int = 10
    eval_every: int = 5
    tasks: int = 16
    preset: str = "quick"
    diagnostics: Mapping[str, float] | None = None
    """GACA's diag/* values, constant over training (default ``DIAGNOSTICS``)."""
    episodes: int | None = None
    """Episodes per evaluation task: outcome files then have an ``episode`` column and one row per
    episode; None: the format without it (one row per task)."""
    histogram: bool = True
    """Log diag/criticality_hist.csv (GACA only)."""
    overflow: bool = False
    """Give the histogram a last bin [4, inf) holding every larger score."""
    tagged: bool = True
    """False: a foreign run without the gaca.* tags."""
    train_metrics: bool = True
    """Log the train/, loss/ and perf/ metrics (the report never reads them; tests skip them for speed)."""
    start_time_ms: int | None = None

    def config(self) -> dict[str, object]:
        """The run's whole config: ``env``, ``scale`` and ``preset`` composed, then the overrides."""
        config = copy.deepcopy(composed(self.env, self.scale, self.preset))
        overrides = {
            "algorithm.method": self.method,
            "trainer.iterations": self.iterations,
            "trainer.eval_every": self.eval_every,
            "seed": self.seed,
            "block": self.block,
            **self.overrides,
        }
        for key, value in overrides.items():
            set_dotted(config, key, value)
        return config

    def params(self) -> dict[str, str]:
        return flatten(self.config())

    def run_key(self) -> str:
        return run_key(self.config())

    def eval_iterations(self) -> list[int]:
        return sorted({*range(0, self.iterations + 1, self.eval_every), self.iterations})

    def curve(self) -> list[float]:
        if self.eval_curve is not None:
            return list(self.eval_curve)
        end = 0.5 if self.final_success is None else self.final_success
        steps = self.eval_iterations()
        return [end * (0.3 + 0.7 * step / self.iterations) for step in steps]


def log_run(client: MlflowClient, experiment_id: str, run: SyntheticRun) -> str:
    """Log ``run`` into ``experiment_id`` and return its run id."""
    tags = {"mlflow.runName": f"{run.method}-{run.env}-{run.scale}-s{run.seed}"}
    if run.tagged:
        tags.update(
            {
                contract.TAG_RUN_KEY: run.run_key(),
                contract.TAG_BLOCK: run.block,
                contract.TAG_METHOD: run.method,
                contract.TAG_ENV: run.env,
                contract.TAG_SEED: str(run.seed),
                contract.TAG_GIT_COMMIT: "0" * 40,
                contract.TAG_SCALE: run.scale,
                contract.TAG_BACKEND: contract.DEFAULT_BACKEND,
            }
        )
    created = client.create_run(experiment_id, start_time=run.start_time_ms, tags=tags)
    run_id = created.info.run_id
    now = int(time.time() * 1000)
    train = TRAIN_METRICS if run.train_metrics else ()
    metrics = [Metric(key, 1.0 / (1 + step), now, step) for step in range(run.iterations) for key in train]
    gated = ESTIMATORS.spec(run.method).gated
    if gated:
        diagnostics = run.diagnostics or DIAGNOSTICS
        metrics += [
            Metric(key, value, now, step) for step in range(run.iterations) for key, value in diagnostics.items()
        ]
    curve = run.curve()
    for step, success in zip(run.eval_iterations(), curve):
        metrics += [
            Metric(contract.EVAL_SUCCESS_RATE, success, now, step),
            Metric(contract.EVAL_RETURN_MEAN, success, now, step),
            Metric(contract.EVAL_EPISODE_LENGTH, 10.0, now, step),
        ]
    if run.final_success is not None:
        metrics.append(Metric(contract.FINAL_EVAL_SUCCESS_RATE, run.final_success, now, run.iterations))
    params = [Param(key, value) for key, value in run.params().items()]
    client.log_batch(run_id, metrics=metrics[:BATCH], params=params)
    for start in range(BATCH, len(metrics), BATCH):
        client.log_batch(run_id, metrics=metrics[start : start + BATCH])

    with tempfile.TemporaryDirectory() as folder:
        artifacts = Path(folder)
        (artifacts / contract.CONFIG_ARTIFACT).write_text("".join(f"{k}: {v}\n" for k, v in run.params().items()))
        for step, success in zip(run.eval_iterations(), curve):
            path = artifacts / contract.outcomes_artifact(step)
            path.parent.mkdir(exist_ok=True)
            path.write_text(outcomes_csv(step, success, run.tasks, run.episodes))
        if gated and run.histogram:
            spread = (run.diagnostics or DIAGNOSTICS)[contract.DIAG_CRITICALITY_STD]
            path = artifacts / contract.CRITICALITY_HISTOGRAM
            path.parent.mkdir()
            path.write_text(histogram_csv(run.seed, spread, run.overflow))
        client.log_artifacts(run_id, folder)
    if run.status != "RUNNING":
        client.set_terminated(run_id, status=run.status)
    return run_id


def outcomes_csv(iteration: int, success: float, tasks: int, episodes: int | None = None) -> str:
    """Per-task outcomes whose mean is ``success`` (rounded to whole episodes): the first episodes
    in (task, episode) order succeed. ``episodes``: rows per task with an ``episode`` column; None:
    one row per task, without it."""
    if episodes is None:
        solved = int(round(success * tasks))
        lines = ["iteration,task_id,success,return,length"]
        lines += [f"{iteration},{task},{int(task < solved)},{float(task < solved)},{10}" for task in range(tasks)]
        return "\n".join(lines) + "\n"
    solved = int(round(success * tasks * episodes))
    lines = ["iteration,task_id,episode,success,return,length"]
    for task in range(tasks):
        for episode in range(episodes):
            won = int(task * episodes + episode < solved)
            lines.append(f"{iteration},{task},{episode},{won},{float(won)},{10}")
    return "\n".join(lines) + "\n"


def histogram_csv(seed: int, spread: float, overflow: bool = False, samples: int = 20_000) -> str:
    """An accumulated histogram of a mean-one criticality score with standard deviation ``spread``
    (a gamma distribution of shape 1 / spread^2); ``overflow`` adds a last bin [4, inf)."""
    shape = 1.0 / spread**2
    scores = np.random.default_rng(seed).gamma(shape, 1.0 / shape, size=samples)
    edges = np.append(HISTOGRAM_BINS, np.inf) if overflow else HISTOGRAM_BINS
    counts, _ = np.histogram(scores, bins=edges)
    lines = ["bin_left,bin_right,count"]
    lines += [f"{left:g},{right:g},{count}" for left, right, count in zip(edges[:-1], edges[1:], counts)]
    return "\n".join(lines) + "\n"


def log_runs(
    client: MlflowClient, experiment: str, runs: Iterable[SyntheticRun], artifact_location: str | None = None
) -> list[str]:
    """Create ``experiment`` if needed and log ``runs`` in order (later runs are newer)."""
    found = client.get_experiment_by_name(experiment)
    experiment_id = (
        found.experiment_id if found else client.create_experiment(experiment, artifact_location=artifact_location)
    )
    start = int(time.time() * 1000)
    return [
        log_run(client, experiment_id, run if run.start_time_ms else replace(run, start_time_ms=start + 1000 * index))
        for index, run in enumerate(runs)
    ]
