"""The horizon-scaling block (``sweeps/horizon.yaml``): final success against the horizon per method.

Runs are matched by configuration, not by the block tag (a run shared with another block carries
that block's tag), with the identity every table cell uses (``gaca.contract.canonical`` through
``analysis.runs.blocks``): finished errand runs of grpo, gigpo and gaca at their default estimator
settings and in one setting, grouped by ``env.horizon`` (the walk growing with it, as the block sets
it). Each point is the mean over seeds with its 95% t interval, clipped to the [0, 100] points a
success rate can take; every seed's score is drawn beside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.render.figures import PANEL_SIZE, STYLE, save
from analysis.runs.blocks import DEFAULT_CONFIG, ConfigKey, canonical_config, methods, setting
from analysis.runs.collect import PARAM_PREFIX, run_config
from analysis.stats.basic import mean_half_width
from gaca.estimators.registry import estimator_color, estimator_label

BLOCK = "horizon"
ENV = "errand"


def grid_keys() -> set[str]:
    """The keys the block's grid varies besides the seed and the method: the horizon and the walk."""
    from gaca.compose.blocks import load_block

    return {key for grid in load_block(BLOCK).grids for key, _ in grid} - {"seed", "algorithm"}


def horizon_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, horizon, seed): the newest finished errand run at the default estimator
    (``blocks.canonical_config``) whose setting (``blocks.setting``, the grid's keys aside) is the
    most common one among them, as for every table cell: a run with another learning rate or group
    size is not counted."""
    defaults = {method: canonical_config({**DEFAULT_CONFIG, "algorithm.method": method}) for method in methods()}
    varied = grid_keys()

    def shared_setting(row: pd.Series) -> ConfigKey | None:
        """The run's setting without the grid's keys; None when it is not at the default estimator."""
        config = {**run_config(row), "algorithm.method": row["method"]}
        try:
            if canonical_config(config) != defaults[row["method"]]:
                return None
            return tuple(sorted((key, value) for key, value in setting(config).items() if key not in varied))
        except KeyError:  # a param the method reads was not logged
            return None

    chosen = runs[(runs["status"] == "FINISHED") & (runs["env"] == ENV) & runs["method"].isin(methods())]
    horizon = PARAM_PREFIX + "env.horizon"
    if chosen.empty or horizon not in chosen:
        return chosen.iloc[0:0]
    settings = [shared_setting(row) for _, row in chosen.iterrows()]
    counts = pd.Series([s for s in settings if s is not None], dtype=object).value_counts(sort=False)
    if counts.empty:
        return chosen.iloc[0:0]
    usual = counts.index[int(np.argmax(counts.to_numpy()))]  # most runs; ties: the newest run's
    chosen = chosen[[s == usual for s in settings]]
    chosen = chosen.assign(horizon=chosen[horizon].astype(int), points=chosen["final"] * 100)
    return chosen.drop_duplicates(subset=["method", "horizon", "seed"])  # newest first


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (method, horizon): n, mean, std and the 95% t interval of final success in points.

    The interval is clipped to [0, 100]: a symmetric t interval around a mean near a bound (every seed
    at 100 but one) reaches past it, and success beyond 100% is not a value the data could support.
    """
    out = []
    for (method, horizon), group in rows.groupby(["method", "horizon"]):
        values = group["points"].to_numpy()
        n, mean = len(values), float(values.mean())
        std = float(values.std(ddof=1)) if n > 1 else float("nan")
        half = float(mean_half_width(np.asarray(std), n))
        low, high = (float(v) for v in np.clip([mean - half, mean + half], 0.0, 100.0))  # NaN stays NaN
        out.append(dict(method=method, horizon=horizon, n=n, mean=mean, std=std, low=low, high=high))
    return pd.DataFrame(out)


def figure(rows: pd.DataFrame, table: pd.DataFrame, folder: Path) -> list[Path]:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.4, PANEL_SIZE[1] * 1.2), layout="constrained")
        ax = fig.add_subplot()
        shown = methods()
        offsets = {m: (i - (len(shown) - 1) / 2) * 0.8 for i, m in enumerate(shown)}
        for method in shown:
            part = table[table["method"] == method].sort_values("horizon")
            if part.empty:
                continue
            x = part["horizon"] + offsets[method]
            color = estimator_color(method)
            ax.errorbar(
                x,
                part["mean"],
                yerr=[part["mean"] - part["low"], part["high"] - part["mean"]],
                color=color,
                marker="o",
                capsize=3,
                label=f"{estimator_label(method)}",
            )
            seeds = rows[rows["method"] == method]
            ax.scatter(seeds["horizon"] + offsets[method] + 0.35, seeds["points"], color=color, s=8, alpha=0.5)
        ax.set_xlabel("horizon (steps; the walk is 0.3 x the horizon)")
        ax.set_ylabel("final held-out success (%)")
        ax.set_xticks(sorted(table["horizon"].unique()))
        ax.legend()
        return save(fig, folder, "horizon_scaling")


def markdown(table: pd.DataFrame) -> str:
    lines = [
        "| method | horizon | n | mean | std | 95% t interval (clipped to [0, 100]) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in table.sort_values(["method", "horizon"]).itertuples():
        lines.append(
            f"| {estimator_label(row.method)} | {row.horizon} | {row.n} | {row.mean:.2f} | {row.std:.2f} | "
            f"[{row.low:.2f}, {row.high:.2f}] |"
        )
    return "\n".join(lines) + "\n"


def write(runs: pd.DataFrame, out: Path) -> tuple[list[Path], str | None]:
    """The figure and ``horizon.md`` under ``out``; (paths, None) or ([], why nothing was written)."""
    rows = horizon_runs(runs)
    if rows.empty or rows["horizon"].nunique() < 2:
        return [], "horizon scaling: skipped, fewer than two horizons have finished errand runs (gaca sweep horizon)"
    table = summary(rows)
    paths = figure(rows, table, out / "figures")
    (out / "horizon.md").write_text("# Horizon scaling (final held-out success, points)\n\n" + markdown(table))
    return [*paths, out / "horizon.md"], None
