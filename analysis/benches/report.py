"""Benchmark of ``gaca report`` on a store of 500 runs with their curves (``python -m analysis.benches.report``).

Fills a SQLite store with synthetic runs that follow the tracking contract (every metric, an
outcome file per evaluation, the criticality histogram), shaped like the paper's results, then
times each reading phase and the whole report. Logging the store is not part of the measurement.

    python -m analysis.benches.report                         # 500 runs in a temporary store
    python -m analysis.benches.report --store bench-store --pdf   # keep the store (reused next time), time the PDF too
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from mlflow.tracking import MlflowClient

from analysis import report
from analysis.benches.synthetic import DIAGNOSTICS, SyntheticRun, log_runs
from analysis.runs import cells, collect
from analysis.runs.blocks import report_blocks
from gaca import contract

EXPERIMENT = "gaca-bench"
MAIN_SUCCESS = {
    ("household", "tiny"): {"grpo": 0.73, "gigpo": 0.867, "gaca": 0.969},
    ("household", "small"): {"grpo": 0.80, "gigpo": 0.908, "gaca": 0.932},
    ("shop", "tiny"): {"grpo": 0.54, "gigpo": 0.674, "gaca": 0.81},
    ("shop", "small"): {"grpo": 0.60, "gigpo": 0.752, "gaca": 0.836},
}
ABLATION_SUCCESS = {
    "random": 0.885,
    "uniform": 0.93,
    "lambda0=0": 0.859,
    "lambda0=0.25": 0.90,
    "lambda0=0.75": 0.90,
    "lambda0=1": 0.846,
    "modulation=1": 0.954,
    "alpha_c=0.7": 0.96,
    "alpha_c=0.5": 0.952,
    "loo": 0.95,
}
"""The paper's ALFWorld 1.5B numbers (docs/estimator.md), interpolated where it gives none."""
LEARNING_TIME = {"grpo": 0.45, "gigpo": 0.35, "gaca": 0.2}
"""Fraction of training at which each method's curve is 63% of the way to its final success."""
TASKS = 128
UNFINISHED = 8
DUPLICATES = 8


def plan_runs(total: int, iterations: int) -> list[SyntheticRun]:
    """``total`` runs: every cell of every block with as many seeds as fit, plus unfinished runs and
    older duplicates (which the report must exclude)."""
    configurations: list[tuple[str, str, str, dict[str, object], float]] = [
        (method, env, scale, {}, rate) for (env, scale), rates in MAIN_SUCCESS.items() for method, rate in rates.items()
    ]
    blocks = report_blocks()
    ablations_at = (blocks.ablation_environment, blocks.ablation_scale)
    variants = {variant.name: variant for block in blocks.ablations for variant in block.variants}
    configurations += [
        ("gaca", *ablations_at, dict(variants[name].overrides), rate) for name, rate in ABLATION_SUCCESS.items()
    ]
    if ablations_at not in MAIN_SUCCESS:  # the ablations' reference row: GACA's defaults
        configurations.append(("gaca", *ablations_at, {}, MAIN_SUCCESS[("household", ablations_at[1])]["gaca"]))
    seeds = (total - UNFINISHED - DUPLICATES) // len(configurations)
    rng = np.random.default_rng(0)
    runs = []
    for seed in range(seeds):
        for method, env, scale, overrides, rate in configurations:
            final = float(np.clip(np.round((rate + rng.normal(0, 0.015)) * TASKS) / TASKS, 0, 1))
            runs.append(_run(method, env, scale, seed, overrides, final, iterations, rng))
    spare = total - len(runs) - UNFINISHED
    older = [replace(run, final_success=0.0) for run in runs[:spare]]
    unfinished = [replace(run, status="RUNNING", final_success=None) for run in runs[spare : spare + UNFINISHED]]
    return older + runs + unfinished


def _run(
    method: str, env: str, scale: str, seed: int, overrides: dict, final: float, iterations: int, rng
) -> SyntheticRun:
    eval_every = 5
    steps = sorted({*range(0, iterations + 1, eval_every), iterations})
    tau = LEARNING_TIME[method] * iterations
    curve = [final * (0.25 + 0.75 * (1 - math.exp(-step / tau)) / (1 - math.exp(-iterations / tau))) for step in steps]
    curve = [float(np.clip(value + rng.normal(0, 0.01), 0, 1)) for value in curve[:-1]] + [final]
    diagnostics = {**DIAGNOSTICS, contract.DIAG_CRITICALITY_STD: 0.31 if env == "household" else 0.27}
    return SyntheticRun(
        method,
        env,
        scale,
        seed,
        overrides,
        final,
        curve,
        iterations=iterations,
        eval_every=eval_every,
        tasks=TASKS,
        preset="paper",
        diagnostics=diagnostics,
        block="bench",
        overflow=True,
    )


def timed(function, *args):
    started = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.benches.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500, help="runs in the store (default 500)")
    parser.add_argument("--iterations", type=int, default=50, help="training iterations per run (default 50)")
    parser.add_argument("--store", type=Path, help="keep the store in this folder and reuse it if it has the runs")
    parser.add_argument("--pdf", action="store_true", help="also time the report with its PDF (needs latexmk)")
    args = parser.parse_args(argv)

    folder = args.store or Path(tempfile.mkdtemp(prefix="gaca-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{folder.resolve() / 'mlflow.db'}"
    client = MlflowClient(uri)
    existing = client.get_experiment_by_name(EXPERIMENT)
    logged_s = 0.0
    if existing is None or len(collect.load_runs(client, EXPERIMENT)) < args.runs:
        runs = plan_runs(args.runs, args.iterations)
        _, logged_s = timed(log_runs, client, EXPERIMENT, runs, str(folder.resolve() / "artifacts"))

    runs_frame, load_runs_s = timed(collect.load_runs, client, EXPERIMENT)
    plan = cells.Plan(tuple(report_blocks().by_name.values()))
    wanted = plan.wanted()
    ledger = cells.screen(runs_frame, wanted)
    candidates = list(ledger.loc[ledger["reason"].isna(), "run_id"])
    curves, curves_s = timed(collect.load_curves, client, candidates)
    ledger = cells.select(ledger, curves, "final")
    used = cells.used(ledger)
    outcomes, outcomes_s = timed(collect.load_outcomes, uri, used.loc[:, ["run_id", "artifact_uri", "iteration"]])

    rows = [
        (
            "store",
            f"{len(runs_frame)} runs, {len(used)} used; {len(curves):,} curve points; "
            f"logged in {logged_s:.0f} s (not timed below)",
        ),
        ("load_runs", f"{load_runs_s:.2f} s ({len(runs_frame)} runs with params and tags)"),
        ("load_curves", f"{curves_s:.2f} s ({len(candidates)} runs x {len(collect.CURVE_METRICS)} metrics, bulk)"),
        ("load_outcomes", f"{outcomes_s:.2f} s ({outcomes['run_id'].nunique()} outcome files, {len(outcomes):,} rows)"),
    ]
    out = folder / "reports"
    for label, extra in [("gaca report --no-pdf", ["--no-pdf"])] + (
        [("gaca report (with PDF)", [])] if args.pdf else []
    ):
        shutil.rmtree(out, ignore_errors=True)
        with contextlib.redirect_stdout(io.StringIO()):
            status, seconds = timed(
                report.main, ["--tracking-uri", uri, "--experiment", EXPERIMENT, "--out", str(out), *extra]
            )
        rows.append((label, f"{seconds:.2f} s end to end in this process (exit {status}; imports not counted)"))
    width = max(len(label) for label, _ in rows)
    print("\n".join(f"{label:<{width}}  {value}" for label, value in rows))
    if args.store is None:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        print(f"store and report kept in {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
