"""A real SQLite MLflow store filled with runs logged with known values, and one report made from it.

Known final success per cell (16 evaluation tasks, so every value is a whole number of tasks):
the main comparison on household/tiny and shop/tiny and every ablation on household/tiny, plus
the loo runs peak above their final success mid-training (for ``--selection best``), and
the troublesome runs a real store collects: another experiment's run, unfinished runs, a run
without its final metric, an older duplicate of a run key, a second spelling of the fixed-weight
configuration, a foreign run without gaca tags, a run of another protocol, a run of the default
estimator with another learning rate and group size, a search run that no table asks for. The
uniform cell has only 2 of its 3 seeds; lambda0 = 0.75 is not run at all.
The shop runs write outcome files with two episodes per task (the ``episode`` column), the others
one row per task; household GACA's criticality histograms end in an overflow bin [4, inf), and
shop GACA logs none.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from analysis.benches.synthetic import SyntheticRun, log_runs

MODULATION_OFF = {"algorithm.alpha_lambda": 0.0, "algorithm.beta_lambda": 0.0}

MAIN_SUCCESS = {
    ("grpo", "household"): [0.5, 0.5625, 0.625],
    ("gigpo", "household"): [0.6875, 0.75, 0.8125],
    ("gaca", "household"): [0.875, 0.9375, 1.0],
    ("grpo", "shop"): [0.25, 0.3125, 0.375],
    ("gigpo", "shop"): [0.4375, 0.5],  # seed 2 is logged without final/eval_success_rate
    ("gaca", "shop"): [0.625, 0.6875, 0.75],
}

ABLATION_SUCCESS = {
    # name: (config overrides, final success per seed)
    "random": ({"algorithm.detector": "random"}, [0.6875, 0.75, 0.8125]),
    "uniform": ({"algorithm.detector": "uniform"}, [0.8125, 0.875]),  # 2 of 3 seeds
    "lambda0=0": ({"algorithm.lambda0": 0.0, **MODULATION_OFF}, [0.625, 0.6875, 0.75]),
    "lambda0=0.25": ({"algorithm.lambda0": 0.25, **MODULATION_OFF}, [0.75, 0.8125, 0.8125]),
    "lambda0=1": ({"algorithm.lambda0": 1.0, **MODULATION_OFF}, [0.5625, 0.625, 0.6875]),
    "modulation=1": ({"algorithm.alpha_lambda": 1.0, "algorithm.beta_lambda": 1.0}, [0.875, 0.875, 0.9375]),
    "alpha_c=0.7": ({"algorithm.alpha_c": 0.7}, [0.8125, 0.875, 0.9375]),
    "alpha_c=0.5": ({"algorithm.alpha_c": 0.5}, [0.75, 0.8125, 0.875]),
    "loo": ({"algorithm.detector": "loo"}, [0.8125, 0.875, 0.875]),
}

BEST_GAIN = 0.0625
CRITICALITY_STD = [0.29, 0.31, 0.30]  # household GACA seeds; shop GACA uses the default 0.30


@dataclass(frozen=True)
class Store:
    uri: str
    folder: Path
    run_ids: dict[str, str]
    """Ids of the special runs by name (e.g. ``running``, ``older_duplicate``)."""


def _diagnostics(seed: int) -> dict[str, float]:
    return {
        "diag/criticality_std": CRITICALITY_STD[seed],
        "diag/lambda_mean": 0.4995,
        "diag/lambda_std": 0.075,
        "diag/clamp_frac": 0.002,
        "diag/nonsingleton_frac": 0.85,
    }


def known_runs() -> tuple[list[SyntheticRun], dict[int, str]]:
    """The runs of experiment ``gaca`` in logging order, and the names of the special ones by index."""
    runs: list[SyntheticRun] = []
    special: dict[int, str] = {}

    def add(run: SyntheticRun, name: str | None = None) -> None:
        if name:
            special[len(runs)] = name
        runs.append(replace(run, train_metrics=not runs))  # the report never reads them: log them once

    # An older run with the same run key as grpo/household/seed 0: the newer one must win.
    add(SyntheticRun("grpo", "household", seed=0, final_success=0.0, block="main"), "older_duplicate")
    # An older, second spelling of the fixed-weight configuration for seed 0 (uniform's cell).
    add(
        SyntheticRun(
            "gaca", seed=0, overrides={"algorithm.lambda0": 0.5, **MODULATION_OFF}, final_success=0.0, block="lambda0"
        ),
        "older_equivalent",
    )
    for (method, env), values in MAIN_SUCCESS.items():
        for seed, value in enumerate(values):
            household = env == "household"
            add(
                SyntheticRun(
                    method,
                    env,
                    seed=seed,
                    final_success=value,
                    block="main",
                    diagnostics=_diagnostics(seed) if household else None,
                    episodes=None if household else 2,
                    overflow=household,
                    histogram=household,
                )
            )
    add(SyntheticRun("gigpo", "shop", seed=2, final_success=None, block="main", episodes=2), "missing_final")
    for name, (overrides, values) in ABLATION_SUCCESS.items():
        for seed, value in enumerate(values):
            # loo peaks one task above its final success at iteration 5, for --selection best
            curve = [0.25, value + BEST_GAIN, value] if name == "loo" else None
            add(
                SyntheticRun(
                    "gaca",
                    seed=seed,
                    overrides=overrides,
                    final_success=value,
                    eval_curve=curve,
                    block=name.split("=")[0],
                )
            )
    add(
        SyntheticRun("gaca", seed=2, overrides={"algorithm.detector": "uniform"}, final_success=None, status="RUNNING"),
        "running",
    )
    add(
        SyntheticRun("gaca", seed=2, overrides={"algorithm.detector": "uniform"}, final_success=0.1, status="FAILED"),
        "failed",
    )
    add(SyntheticRun("gaca", seed=0, final_success=0.99, preset="paper", iterations=15), "other_protocol")
    add(SyntheticRun("gaca", seed=0, overrides={"algorithm.lambda0": 0.3}, final_success=0.5, block="search"), "search")
    add(
        SyntheticRun(
            "gaca", seed=0, overrides={"trainer.lr": 0.5, "trainer.group_size": 2}, final_success=0.2, block="detector"
        ),
        "other_trainer",
    )
    add(SyntheticRun("gaca", seed=0, final_success=0.01, tagged=False), "foreign")
    return runs, special


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    # SQLite fsyncs every commit; a RAM-backed folder, where the machine has one, fills the store
    # about twice as fast (creating the schema alone takes seconds on disk).
    ram = Path("/dev/shm")
    if ram.is_dir() and os.access(ram, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="gaca-analysis-", dir=ram))
    else:
        folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = MlflowClient(uri)
    runs, special = known_runs()
    ids = log_runs(client, "gaca", runs, artifact_location=str(folder / "artifacts"))
    other = log_runs(
        client, "other", [SyntheticRun("gaca", seed=1, final_success=0.02)], artifact_location=str(folder / "other")
    )
    names = {name: ids[index] for index, name in special.items()}
    names["other_experiment"] = other[0]
    yield Store(uri, folder, names)
    shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Report:
    out: Path
    stdout: str
    status: int


def make_report(store: Store, out: Path, *args: str) -> Report:
    from analysis.report import main

    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        status = main(["--tracking-uri", store.uri, "--out", str(out), *args])
    return Report(out, captured.getvalue(), status)


@pytest.fixture(scope="session")
def run_report(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Report]:
    """``run_report(*args)``: ``gaca report`` on the store with extra arguments, into a new folder."""
    return lambda *args: make_report(store, tmp_path_factory.mktemp("report"), *args)


@pytest.fixture(scope="session")
def report(run_report: Callable[..., Report]) -> Report:
    """The full report (every block, final evaluation), without compiling the PDF."""
    return run_report("--no-pdf")


@pytest.fixture(scope="session")
def known() -> dict[str, object]:
    """The values the store was filled with (see the module docstring)."""
    return {
        "main": MAIN_SUCCESS,
        "ablations": ABLATION_SUCCESS,
        "criticality_std": CRITICALITY_STD,
        "best_gain": BEST_GAIN,
    }
