"""Learning evidence: initial and final evaluation success per (method, env, scale), over seeds.

``python -m analysis.studies.learning [--tracking-uri URI] [--experiment gaca] [--block main] [--preset default]``
prints a markdown table (docs/benchmarks.md, "Learning on household and shop"): for each cell the mean and standard
deviation over seeds of the evaluation success before training (iteration 0, the initial policy)
and at the end (``final/eval_success_rate``), and of the gain. Initial and final are measured on
the same held-out tasks, so the gain is paired per seed.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import pandas as pd
from mlflow.tracking import MlflowClient

from analysis.runs.blocks import DEFAULT_CONFIG
from analysis.runs.collect import (
    DEFAULT_EXPERIMENT,
    EVAL_METRIC,
    PARAM_PREFIX,
    load_curves,
    load_runs,
    resolve_tracking_uri,
    run_config,
)
from gaca.estimators.registry import read_fields

CELL = ["method", "env", "scale"]


def variant(run: Mapping[str, object]) -> str:
    """The run's method with the estimator params it reads (its registry spec) that differ from
    GACA's defaults, e.g. ``gaca detector=uniform``: an ablated GACA (another block's run) never
    shares GACA's cell."""
    method = str(run["method"])
    prefix = "algorithm."
    algorithm = {key.removeprefix(prefix): value for key, value in run_config(run).items() if key.startswith(prefix)}
    algorithm["method"] = method
    try:
        fields = read_fields(algorithm)
    except (KeyError, ValueError):  # an estimator this process does not know, or a param not logged
        fields = []
    changed = [
        f"{key}={algorithm[key]}"
        for key in fields
        if key != "method" and key in algorithm and algorithm[key] != DEFAULT_CONFIG[prefix + key]
    ]
    return " ".join([method, *changed])


def learning_frame(runs: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """One row per finished run: ``method, env, scale, seed, initial, final, gain``; ``method`` names
    the variant (``variant``).

    runs: ``load_runs`` rows (newest first; the newest finished run of a (cell, seed) is kept).
    curves: ``load_curves(..., [EVAL_METRIC])`` of those runs (``initial`` is its step-0 value).
    """
    finished = runs[(runs["status"] == "FINISHED") & runs["final"].notna()].copy()
    finished["method"] = [variant(run) for run in finished.to_dict("records")]
    finished = finished.drop_duplicates([*CELL, "seed"])
    initial = curves[(curves["metric"] == EVAL_METRIC) & (curves["step"] == 0)].set_index("run_id")["value"]
    frame = finished[["run_id", *CELL, "seed", "final"]].copy()
    frame["initial"] = frame["run_id"].map(initial).astype("float64")
    frame = frame.dropna(subset=["initial"]).astype({"final": "float64"})
    frame["gain"] = frame["final"] - frame["initial"]
    return frame.drop(columns="run_id").reset_index(drop=True)


def learning_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per cell: seeds and mean/std (over seeds, ddof=1) of initial, final and gain."""
    grouped = frame.groupby(CELL, sort=True)
    table = grouped.agg(
        seeds=("seed", "nunique"),
        initial_mean=("initial", "mean"),
        initial_std=("initial", "std"),
        final_mean=("final", "mean"),
        final_std=("final", "std"),
        gain_mean=("gain", "mean"),
        gain_std=("gain", "std"),
    )
    return table.reset_index()


def markdown(table: pd.DataFrame) -> str:
    """The table in percentage points, ``mean ± std`` (std blank with one seed)."""

    def cell(mean: float, std: float, signed: bool = False) -> str:
        text = f"{100 * mean:+.1f}" if signed else f"{100 * mean:.1f}"
        return text if pd.isna(std) else f"{text} ± {100 * std:.1f}"

    lines = [
        "| method | env | scale | seeds | initial success (%) | final success (%) | gain (points) |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in table.itertuples():
        lines.append(
            f"| {row.method} | {row.env} | {row.scale} | {row.seeds} | {cell(row.initial_mean, row.initial_std)} | "
            f"{cell(row.final_mean, row.final_std)} | {cell(row.gain_mean, row.gain_std, signed=True)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.studies.learning", description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default=None, help="default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    parser.add_argument("--block", default=None, help="only runs tagged with this gaca.block (default: all)")
    parser.add_argument("--preset", default=None, help="only runs of this trainer preset (e.g. default)")
    args = parser.parse_args(argv)

    client = MlflowClient(resolve_tracking_uri(args.tracking_uri))
    runs = load_runs(client, args.experiment)
    if args.block is not None:
        runs = runs[runs["block"] == args.block]
    preset_column = PARAM_PREFIX + "trainer.preset"
    if args.preset is not None:
        if preset_column not in runs:
            raise SystemExit(
                f"no run records {preset_column[len(PARAM_PREFIX) :]}; cannot select --preset {args.preset}"
            )
        runs = runs[runs[preset_column] == args.preset]
    frame = learning_frame(runs, load_curves(client, runs["run_id"].tolist(), [EVAL_METRIC]))
    if frame.empty:
        raise SystemExit("no finished run with an iteration-0 evaluation matches the selection")
    print(markdown(learning_table(frame)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
