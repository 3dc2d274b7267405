"""Do a setting's seeds agree? Per seed, where a run starts, where it ends, how often it writes invalid
actions, and whether it collapsed; per setting, the collapse fraction and the seed std of final success.

    python -m analysis.studies.stability                          # every block, $MLFLOW_TRACKING_URI
    python -m analysis.studies.stability --block detector --where algorithm.detector=entropy
    python -m analysis.studies.stability --by trainer.kl_coef,trainer.lr
    python -m analysis.studies.stability --properties            # and the testbed's properties per setting

A run *collapsed* when its final held-out success ends more than ``COLLAPSE_DROP`` below its own
starting success (the evaluation at iteration 0, before any update). Settings are told apart by the
identity-bearing params (``gaca.contract.canonical``) that differ between the selected runs, seed aside,
unless ``--by`` names them. The testbed's stability targets (at most one run in ten collapsed, a pooled
seed std of final success of at most ``MAX_SEED_STD``) are judged on these numbers (docs/testbed.md).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from mlflow.tracking import MlflowClient
from scipy import stats

from analysis.runs.collect import load_curves, load_runs, resolve_tracking_uri, run_config
from analysis.runs.where import mismatches, parse_where
from gaca import contract
from gaca.bench.testbed import LAST, PROPERTIES, start_and_trained

COLLAPSE_DROP = 0.10
"""A run that ends more than this below its own starting success (0.10 = 10 points) collapsed."""
MAX_COLLAPSE_FRACTION = 0.10
MAX_SEED_STD = 0.10
"""The testbed's targets: at most one run in ten collapsed, seed std of final success at most 10 points."""
INVALID_TAIL = 3
"""Invalid-action rate: the mean over a run's last ``INVALID_TAIL`` training iterations."""
HISTORIES = (contract.EVAL_SUCCESS_RATE, contract.TRAIN_INVALID_ACTION_RATE)
NOT_A_SETTING = ("seed",)


@dataclass(frozen=True)
class SeedRow:
    """One run: success in [0, 1] at its start (iteration 0) and end, invalid-action rates, collapse."""

    run_id: str
    seed: int
    start: float
    final: float
    invalid_tail: float
    invalid_peak: float

    @property
    def collapsed(self) -> bool:
        return self.final < self.start - COLLAPSE_DROP


@dataclass(frozen=True)
class SettingSummary:
    """The seeds of one setting: collapse count with its exact 95% (Clopper-Pearson) interval, mean and
    sample std of final success over seeds (NaN below two seeds)."""

    setting: str
    rows: tuple[SeedRow, ...]

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def collapsed(self) -> int:
        return sum(row.collapsed for row in self.rows)

    @property
    def collapse_interval(self) -> tuple[float, float]:
        return clopper_pearson(self.collapsed, self.n)

    @property
    def finals(self) -> np.ndarray:
        return np.array([row.final for row in self.rows])

    @property
    def mean(self) -> float:
        return float(self.finals.mean()) if self.n else math.nan

    @property
    def seed_std(self) -> float:
        return float(self.finals.std(ddof=1)) if self.n >= 2 else math.nan

    @property
    def meets_targets(self) -> bool:
        return self.collapsed <= MAX_COLLAPSE_FRACTION * self.n and self.seed_std <= MAX_SEED_STD


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval for ``k`` successes in ``n`` trials; ``(0, 1)`` for ``n == 0``."""
    if n == 0:
        return 0.0, 1.0
    tail = (1 - level) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - tail, k + 1, n - k))
    return low, high


def pooled_seed_std(summaries: Iterable[SettingSummary]) -> float:
    """The seed std pooled over settings (each weighted by its seeds minus one); NaN without two seeds."""
    squares = dof = 0.0
    for summary in summaries:
        if summary.n >= 2:
            squares += float(((summary.finals - summary.mean) ** 2).sum())
            dof += summary.n - 1
    return math.sqrt(squares / dof) if dof else math.nan


def seed_rows(runs: pd.DataFrame, curves: pd.DataFrame) -> dict[str, SeedRow]:
    """run_id -> its ``SeedRow``, for the finished runs of ``runs`` that have a starting evaluation."""
    by_run = {run_id: frame for run_id, frame in curves.groupby("run_id")}
    result = {}
    for run in runs.itertuples():
        frame = by_run.get(run.run_id)
        if frame is None or math.isnan(run.final):
            continue
        evals = frame[frame["metric"] == contract.EVAL_SUCCESS_RATE].sort_values("step")
        invalid = frame[frame["metric"] == contract.TRAIN_INVALID_ACTION_RATE].sort_values("step")["value"]
        if evals.empty or evals["step"].iloc[0] != 0:
            continue
        result[run.run_id] = SeedRow(
            run_id=run.run_id,
            seed=int(run.seed),
            start=float(evals["value"].iloc[0]),
            final=float(run.final),
            invalid_tail=float(invalid.tail(INVALID_TAIL).mean()) if len(invalid) else math.nan,
            invalid_peak=float(invalid.max()) if len(invalid) else math.nan,
        )
    return result


def setting_labels(runs: pd.DataFrame, by: Sequence[str] | None = None) -> pd.Series:
    """run_id-indexed labels ``key=value, ...`` over ``by``, or over the canonical params that differ
    between ``runs`` (seed aside); ``"all"`` when nothing differs."""
    canon = {
        run["run_id"]: contract.flatten(contract.canonical(contract.unflatten(run_config(run))))
        for _, run in runs.iterrows()
    }
    if by:
        keys = list(by)
    else:
        every = sorted({key for config in canon.values() for key in config})
        keys = [
            key for key in every if key not in NOT_A_SETTING and len({config.get(key) for config in canon.values()}) > 1
        ]
    labels = {
        run_id: ", ".join(f"{key}={config.get(key)}" for key in keys) if keys else "all"
        for run_id, config in canon.items()
    }
    return pd.Series(labels, dtype=object)


def summarise(runs: pd.DataFrame, curves: pd.DataFrame, by: Sequence[str] | None = None) -> list[SettingSummary]:
    """Per setting (see ``setting_labels``), its seeds' rows sorted by seed; a rerun of a seed replaces
    the older run (``runs`` is newest first)."""
    rows = seed_rows(runs, curves)
    chosen = runs[runs["run_id"].isin(list(rows))]
    if chosen.empty:
        return []
    labels = setting_labels(chosen, by)
    summaries = []
    for label in sorted(set(labels)):
        ids = [run_id for run_id in chosen["run_id"] if labels[run_id] == label]
        by_seed: dict[int, SeedRow] = {}
        for run_id in ids:  # newest first
            by_seed.setdefault(rows[run_id].seed, rows[run_id])
        summaries.append(SettingSummary(label, tuple(by_seed[s] for s in sorted(by_seed))))
    return summaries


def select_runs(runs: pd.DataFrame, block: str | None, where: Mapping[str, object]) -> pd.DataFrame:
    """Finished runs of ``block`` (any block when None) whose params equal every ``where`` value."""
    chosen = runs[runs["status"] == "FINISHED"]
    if block is not None:
        chosen = chosen[chosen["block"] == block]
    return chosen[mismatches(chosen, where).isna()]


def points(value: float, signed: bool = False) -> str:
    """A rate in percentage points, one decimal (``signed``: with its sign); ``---`` for NaN."""
    if math.isnan(value):
        return "---"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def seed_table(summary: SettingSummary) -> list[str]:
    """Markdown rows: seed, start, final, invalid (last iterations), invalid peak, collapsed."""
    lines = [
        f"| seed | start | final | invalid, last {INVALID_TAIL} | invalid peak | collapsed |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in summary.rows:
        lines.append(
            f"| {row.seed} | {points(row.start)} | {points(row.final)} | {row.invalid_tail:.2f} | "
            f"{row.invalid_peak:.2f} | {'yes' if row.collapsed else 'no'} |"
        )
    return lines


def summary_line(summary: SettingSummary) -> str:
    low, high = summary.collapse_interval
    return (
        f"| {summary.setting} | {summary.n} | {summary.collapsed} [{100 * low:.0f}, {100 * high:.0f}]% | "
        f"{points(summary.mean)} | {points(summary.seed_std)} | {'yes' if summary.meets_targets else 'no'} |"
    )


def render(summaries: Sequence[SettingSummary]) -> str:
    """Per setting its seed table, then one summary table and the pooled seed std, in Markdown."""
    out: list[str] = []
    for summary in summaries:
        out += [f"**{summary.setting}**", "", *seed_table(summary), ""]
    out += [
        f"| setting | seeds | collapsed (exact 95% interval) | mean final | seed std | "
        f"targets (<= {MAX_COLLAPSE_FRACTION:.0%} collapsed, std <= {100 * MAX_SEED_STD:.0f}) |",
        "| --- | ---: | --- | ---: | ---: | --- |",
        *(summary_line(s) for s in summaries),
        "",
        f"pooled seed std of final success: {points(pooled_seed_std(summaries))} points; "
        f"collapsed: final more than {100 * COLLAPSE_DROP:.0f} points below the run's own start",
    ]
    return "\n".join(out)


def properties(summaries: Sequence[SettingSummary], curves: pd.DataFrame) -> str:
    """The testbed's properties (``gaca.bench.testbed.PROPERTIES``) per setting, each the mean over the
    setting's runs of its value at iteration 1 ("start") and of its last ``LAST`` iterations ("trained")."""
    header = "| property | " + " | ".join(f"{s.setting}: start | trained" for s in summaries) + " |"
    lines = [header, "| --- |" + " ---: | ---: |" * len(summaries)]
    for label, key in PROPERTIES:
        cells = []
        for summary in summaries:
            pairs = [
                start_and_trained(list(zip(frame["step"], frame["value"])))
                for row in summary.rows
                if not (frame := curves[(curves["run_id"] == row.run_id) & (curves["metric"] == key)]).empty
            ]
            for position in (0, 1):
                values = [value for pair in pairs if (value := pair[position]) is not None]
                cells.append(f"{np.mean(values):.3f}" if values else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", f"start: iteration 1 (the prior row: step 0); trained: mean of the last {LAST}"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.studies.stability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tracking-uri", default=None)
    parser.add_argument("--experiment", default="gaca")
    parser.add_argument("--block", default=None, help="only this block's runs (default: every block)")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="only runs with this param")
    parser.add_argument("--by", default=None, help="comma-separated params that tell settings apart")
    parser.add_argument("--properties", action="store_true", help="also the testbed's properties per setting")
    args = parser.parse_args(argv)
    try:
        where = parse_where(args.where)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    client = MlflowClient(resolve_tracking_uri(args.tracking_uri))
    try:
        runs = select_runs(load_runs(client, args.experiment), args.block, where)
    except LookupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if runs.empty:
        print("error: no finished run matches --block/--where", file=sys.stderr)
        return 2
    metrics = [*HISTORIES, *(key for _, key in PROPERTIES if args.properties and key not in HISTORIES)]
    curves = load_curves(client, list(runs["run_id"]), metrics)
    by = [key.strip() for key in args.by.split(",")] if args.by else None
    summaries = summarise(runs, curves, by)
    print(render(summaries))
    if args.properties:
        print("\n" + properties(summaries, curves))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
