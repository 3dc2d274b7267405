"""The two trainers side by side: each estimator through the CPU backend and through verl-agent's
trainer (``backend=verl_cpu``), from the same start, on the same setting, over seeds.

    python -m analysis.studies.backends [--tracking-uri URI] [--experiment gaca] [--block BLOCK]
        [--methods M,...] [--out DIR]

Reads every finished run of the store (one setting: the runs of the two trainers must differ in
``backend.*`` and nothing else that changes a result, which the caller ensures by running one
command pair) and prints a markdown table per (method, backend): seeds, evaluation success at each
evaluation (mean over seeds), the gain final − start with its 95% t interval over seeds, training
success and invalid-action rate of the first and last iterations; then, per method, the difference
verl − cpu of the final success paired by seed, with its t interval. Writes one figure per method
(``backends_<method>.pdf/.png``): evaluation success (left) and training success (right) against
iteration, both trainers, a thin line per seed and a thick line for their mean.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from mlflow.tracking import MlflowClient

from analysis.render.figures import PANEL_SIZE, STYLE, save
from analysis.runs.collect import (
    DEFAULT_EXPERIMENT,
    EVAL_METRIC,
    PARAM_PREFIX,
    load_curves,
    load_runs,
    resolve_tracking_uri,
)
from analysis.stats.basic import mean_half_width
from analysis.studies.learning import variant
from analysis.studies.stability import points
from gaca import contract

BACKEND_PARAM = PARAM_PREFIX + "backend.name"
METRICS = (EVAL_METRIC, contract.TRAIN_SUCCESS_RATE, contract.TRAIN_INVALID_ACTION_RATE)
BACKEND_STYLE = {"cpu": ("#1f77b4", "CPU backend"), "verl": ("#d62728", "verl-agent on CPU")}
"""Colour and legend label per ``backend.name``."""
DEFAULT_OUT = Path("reports") / "backends"


def finished_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Finished runs with a final evaluation: ``run_id, method, backend, seed``, the newest run of each
    (method, backend, seed); ``method`` names the variant (``analysis.studies.learning.variant``)."""
    finished = runs[(runs["status"] == "FINISHED") & runs["final"].notna()].copy()
    if finished.empty or BACKEND_PARAM not in finished:
        return pd.DataFrame(columns=["run_id", "method", "backend", "seed"])
    finished["method"] = [variant(run) for run in finished.to_dict("records")]
    finished["backend"] = finished[BACKEND_PARAM].astype(str)
    finished = finished.drop_duplicates(["method", "backend", "seed"])  # load_runs: newest first
    return finished[["run_id", "method", "backend", "seed"]].reset_index(drop=True)


def curve_frame(selected: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """``curves`` (``load_curves``) joined with each run's ``method, backend, seed``."""
    return curves.merge(selected, on="run_id", how="inner")


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and its 95% t interval over seeds (NaN bounds below two seeds)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = float(mean_half_width(np.std(values, ddof=1), len(values)))
    return mean, mean - half, mean + half


def _interval(mean: float, low: float, high: float) -> str:
    text = points(mean, signed=True)
    return text if math.isnan(low) else f"{text} [{points(low, True)}, {points(high, True)}]"


def _per_run(frame: pd.DataFrame, metric: str, which: str) -> pd.Series:
    """Each run's first or last logged value of ``metric``, indexed by (method, backend, seed)."""
    rows = frame[frame["metric"] == metric].sort_values("step")
    pick = rows.groupby(["method", "backend", "seed"])["value"]
    return pick.first() if which == "first" else pick.last()


def _mean_over_seeds(series: pd.Series, method: str, backend: str) -> float:
    """Mean over seeds of a ``_per_run`` series for one (method, backend); NaN when it logged none."""
    try:
        return float(series.xs((method, backend), level=["method", "backend"]).mean())
    except KeyError:
        return math.nan


def table(frame: pd.DataFrame) -> str:
    """The markdown table of the module docstring, in points; then the paired differences."""
    evals = frame[frame["metric"] == EVAL_METRIC]
    steps = sorted(evals["step"].unique())
    by_run = evals.pivot_table(index=["method", "backend", "seed"], columns="step", values="value")
    per_run = {
        (metric, which): _per_run(frame, metric, which)
        for metric in (contract.TRAIN_SUCCESS_RATE, contract.TRAIN_INVALID_ACTION_RATE)
        for which in ("first", "last")
    }
    lines = [
        "| method | trainer | seeds | eval success at iteration "
        + " / ".join(str(s) for s in steps)
        + " (%) | gain, final − start (points, 95% t) | train success, first → last (%) | invalid rate, first → last |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    finals: dict[tuple[str, str], pd.Series] = {}
    for (method, backend), group in by_run.groupby(level=["method", "backend"], sort=True):
        group = group.droplevel(["method", "backend"])
        final = group.ffill(axis=1).iloc[:, -1]  # each run's last evaluation
        finals[(method, backend)] = final
        gain = _t_interval((final - group[steps[0]]).to_numpy())
        means = " / ".join(points(group[s].mean()) for s in steps)
        summary = {name: _mean_over_seeds(series, method, backend) for name, series in per_run.items()}
        label = BACKEND_STYLE.get(backend, (None, backend))[1]
        lines.append(
            f"| {method} | {label} | {len(group)} | {means} | {_interval(*gain)} | "
            f"{points(summary[(contract.TRAIN_SUCCESS_RATE, 'first')])} → "
            f"{points(summary[(contract.TRAIN_SUCCESS_RATE, 'last')])} | "
            f"{summary[(contract.TRAIN_INVALID_ACTION_RATE, 'first')]:.2f} → "
            f"{summary[(contract.TRAIN_INVALID_ACTION_RATE, 'last')]:.2f} |"
        )
    methods = sorted({method for method, _ in finals})
    differences = []
    for method in methods:
        if (method, "cpu") in finals and (method, "verl") in finals:
            cpu, verl = finals[(method, "cpu")], finals[(method, "verl")]
            seeds = sorted(set(cpu.index) & set(verl.index))
            if seeds:
                paired = (verl[seeds] - cpu[seeds]).to_numpy()
                per_seed = ", ".join(f"{s}: {points(d, True)}" for s, d in zip(seeds, paired, strict=True))
                differences.append(
                    f"- {method}: final success verl − cpu {_interval(*_t_interval(paired))} points over "
                    f"{len(seeds)} seeds (per seed {per_seed})"
                )
    return "\n".join([*lines, "", *differences])


def figures(frame: pd.DataFrame, folder: Path) -> list[Path]:
    """One figure per method (module docstring); the paths written."""
    written: list[Path] = []
    panels = ((EVAL_METRIC, "evaluation success (%)"), (contract.TRAIN_SUCCESS_RATE, "training success (%)"))
    for method, rows in frame.groupby("method", sort=True):
        with matplotlib.rc_context(STYLE):
            figure = Figure(figsize=(2 * PANEL_SIZE[0], PANEL_SIZE[1] + 0.3), layout="constrained")
            axes = figure.subplots(1, len(panels), sharey=True)
            for axis, (metric, label) in zip(axes, panels, strict=True):
                for backend, runs in rows[rows["metric"] == metric].groupby("backend", sort=True):
                    color, name = BACKEND_STYLE.get(backend, ("#7f7f7f", backend))
                    curves = runs.pivot_table(index="step", columns="seed", values="value")
                    for seed in curves.columns:
                        axis.plot(curves.index, 100 * curves[seed], color=color, lw=0.7, alpha=0.45)
                    axis.plot(
                        curves.index,
                        100 * curves.mean(axis=1),
                        color=color,
                        lw=2.0,
                        marker="o" if metric == EVAL_METRIC else None,
                        label=f"{name} ({curves.shape[1]} seeds)",
                    )
                axis.set_xlabel("iteration")
                axis.set_ylabel(label)
                axis.set_ylim(0, 100)
            axes[0].legend(loc="lower right")
            figure.suptitle(f"{method}: the two trainers from the same start (thin: one seed; thick: mean)")
            written += save(figure, folder, f"backends_{method.replace(' ', '_').replace('=', '-')}")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.studies.backends", description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default=None, help="default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    parser.add_argument("--block", default=None, help="only runs tagged with this gaca.block (default: all)")
    parser.add_argument(
        "--methods", default=None, help="only these variants, comma-separated (e.g. gaca,gigpo,grpo; default: all)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"figures' folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)

    client = MlflowClient(resolve_tracking_uri(args.tracking_uri))
    try:
        runs = load_runs(client, args.experiment)
    except LookupError as error:
        raise SystemExit(f"python -m analysis.studies.backends: {error}") from None
    if args.block is not None:
        runs = runs[runs["block"] == args.block]
    selected = finished_runs(runs)
    if args.methods is not None:
        selected = selected[selected["method"].isin(args.methods.split(","))]
    if selected.empty:
        raise SystemExit(
            "python -m analysis.studies.backends: no finished run with a final evaluation matches the selection"
        )
    frame = curve_frame(selected, load_curves(client, selected["run_id"].tolist(), METRICS))
    print(table(frame))
    for path in figures(frame, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
