"""Is the testbed sensitive to the estimator? A one-way test of final success (or of the area under the
learning curve) across the settings of one parameter of a block (default: the lambda0 block's five
fixed weights, modulation off).

    python -m analysis.studies.sensitivity                      # lambda0 block, $MLFLOW_TRACKING_URI
    python -m analysis.studies.sensitivity --measure auc        # mean held-out success over the run's evaluations
    python -m analysis.studies.sensitivity --block detector --by algorithm.detector

Prints per setting the mean and seed std of the measure (points) with the seeds found,
the spread of the means, the pooled seed std, a one-way ANOVA (F, p), a Kruskal-Wallis test (H, p)
and, where every setting has the same seeds, Friedman's test with seeds as blocks (chi2, p): the
runs of one seed share the starting policy, the task order and the evaluation tasks.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from scipy import stats

from analysis.runs.collect import EVAL_METRIC, PARAM_PREFIX, auc_by_run, load_curves, load_runs, resolve_tracking_uri
from analysis.stats.basic import POWER, anova_seeds_needed

MEASURES = {"final": "final held-out success", "auc": "AUC (mean held-out success over the run's evaluations)"}

FIXED_WEIGHTS = {"algorithm.alpha_lambda": 0.0, "algorithm.beta_lambda": 0.0}
"""The lambda0 block's fixed-weight rows: the gate's modulation off."""


@dataclass(frozen=True)
class Sensitivity:
    """Final success in points per setting (rows: settings; columns: seeds) and the tests across them."""

    table: pd.DataFrame
    spread: float
    pooled_seed_std: float
    anova: tuple[float, float]
    kruskal: tuple[float, float]
    friedman: tuple[float, float] | None
    seeds_needed: dict[float, int | None]
    """alpha -> seeds per setting a one-way ANOVA needs for power ``POWER`` if the observed means were true
    (empty without seed noise)."""


def select(runs: pd.DataFrame, block: str, by: str, where: dict[str, float], measure: str = "final") -> pd.DataFrame:
    """Finished runs of ``block`` with every ``where`` param equal, as a settings x seeds table of points
    of ``runs[measure]`` (``final``; ``auc`` when the caller added that column, see ``with_auc``)."""
    chosen = runs[(runs["status"] == "FINISHED") & (runs["block"] == block)]
    for key, value in where.items():
        column = PARAM_PREFIX + key
        if column not in chosen:
            return pd.DataFrame()
        chosen = chosen[chosen[column].astype(float) == value]
    column = PARAM_PREFIX + by
    if column not in chosen or chosen.empty:
        return pd.DataFrame()
    chosen = chosen.drop_duplicates(subset=[column, "seed"])  # newest first: a rerun replaces an older run
    return chosen.pivot(index=column, columns="seed", values=measure).sort_index() * 100


def with_auc(runs: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with an ``auc`` column: each run's mean ``eval/success_rate`` over its evaluations
    (``collect.load_curves`` frame; NaN for a run without evaluations)."""
    return runs.assign(auc=runs["run_id"].map(auc_by_run(curves)).astype(float))


def _pair(result: Any) -> tuple[float, float]:
    """A scipy test result as (statistic, p value)."""
    statistic, p_value = result
    return float(statistic), float(p_value)


def sensitivity(table: pd.DataFrame) -> Sensitivity:
    """The tests across the rows of a settings x seeds table (NaN: a seed missing for that setting)."""
    groups = [row.dropna().to_numpy() for _, row in table.iterrows()]
    if len(groups) < 2 or any(len(g) < 2 for g in groups):
        raise ValueError("need at least two settings with at least two seeds each")
    means = [g.mean() for g in groups]
    within = sum(((g - g.mean()) ** 2).sum() for g in groups)
    dof = sum(len(g) - 1 for g in groups)
    pooled = math.sqrt(within / dof)
    complete = table.dropna(axis=1)
    friedman = None
    if complete.shape[1] >= 2 and len(groups) >= 3:
        friedman = _pair(stats.friedmanchisquare(*complete.to_numpy()))
    return Sensitivity(
        table=table,
        spread=float(max(means) - min(means)),
        pooled_seed_std=pooled,
        anova=_pair(stats.f_oneway(*groups)),
        kruskal=_pair(stats.kruskal(*groups)),
        friedman=friedman,
        seeds_needed={alpha: anova_seeds_needed(means, pooled, alpha) for alpha in (0.05, 0.01)} if pooled > 0 else {},
    )


def render(result: Sensitivity, by: str, measure: str = "final") -> str:
    lines = [f"{MEASURES[measure]} (points) by {by}; seeds as columns"]
    table = result.table
    lines.append(f"{by:>24} " + " ".join(f"{f's{s}':>6}" for s in table.columns) + f" {'mean':>7} {'std':>6} {'n':>3}")
    for setting, row in table.iterrows():
        values = row.dropna()
        cells = " ".join(f"{v:>6.1f}" if not math.isnan(v) else f"{'-':>6}" for v in row)
        lines.append(f"{setting!s:>24} {cells} {values.mean():>7.2f} {values.std(ddof=1):>6.2f} {len(values):>3}")
    lines.append(
        f"spread of the means: {result.spread:.2f} points; pooled seed std: {result.pooled_seed_std:.2f} points"
    )
    lines.append(f"one-way ANOVA: F = {result.anova[0]:.2f}, p = {result.anova[1]:.2g}")
    lines.append(f"Kruskal-Wallis: H = {result.kruskal[0]:.2f}, p = {result.kruskal[1]:.2g}")
    if result.friedman is not None:
        lines.append(f"Friedman (seeds as blocks): chi2 = {result.friedman[0]:.2f}, p = {result.friedman[1]:.2g}")
    if result.seeds_needed:
        said = " and ".join(
            f"{n if n is not None else 'more than 10000'} at alpha {alpha}" for alpha, n in result.seeds_needed.items()
        )
        lines.append(
            f"seeds per setting for power {POWER} if these means were the true ones (an optimistic plan: "
            f"observed spreads overstate true ones): {said}"
        )
    return "\n".join(lines)


def restrict_seeds(table: pd.DataFrame, seeds: list[int]) -> pd.DataFrame:
    """The columns of a settings x seeds table that are in ``seeds`` (a design's seeds: runs of other
    seeds, such as an interrupted extension, stay out of the tests)."""
    return table.loc[:, [seed for seed in table.columns if int(seed) in seeds]]


def seed_list(text: str) -> list[int]:
    """``--seeds``: comma-separated integers."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, e.g. 0,1,2, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.studies.sensitivity",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--uri", default=None, help="tracking URI (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)")
    parser.add_argument("--experiment", default="gaca")
    parser.add_argument("--block", default="lambda0")
    parser.add_argument("--by", default="algorithm.lambda0", help="the param whose settings are compared")
    parser.add_argument("--all-rows", action="store_true", help="do not restrict lambda0 to the modulation-off rows")
    parser.add_argument("--measure", choices=sorted(MEASURES), default="final", help="final success or AUC")
    parser.add_argument(
        "--seeds",
        type=seed_list,
        default=None,
        help="comma-separated seeds to compare (default: every seed found), e.g. 0,1,2,3,4",
    )
    args = parser.parse_args(argv)
    from mlflow.tracking import MlflowClient

    where = FIXED_WEIGHTS if args.by == "algorithm.lambda0" and not args.all_rows else {}
    client = MlflowClient(resolve_tracking_uri(args.uri))
    runs = load_runs(client, args.experiment)
    if args.measure == "auc" and not runs.empty:
        runs = with_auc(runs, load_curves(client, list(runs["run_id"]), [EVAL_METRIC]))
    table = select(runs, args.block, args.by, where, args.measure)
    if args.seeds is not None:
        table = restrict_seeds(table, args.seeds)
    if table.empty:
        among = f" among seeds {args.seeds}" if args.seeds is not None else ""
        print(f"no finished runs of block {args.block!r} with {args.by}{among}; run `gaca sweep {args.block}` first")
        return 1
    try:
        result = sensitivity(table)
    except ValueError as error:
        print(
            f"python -m analysis.studies.sensitivity: {error} "
            f"(found {table.notna().sum(axis=1).to_dict()} seeds per setting)"
        )
        return 1
    print(render(result, args.by, args.measure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
