"""The paper's figures as PDF (for LaTeX) and PNG (for a quick look).

Drawn with matplotlib's object API (``Figure``), which renders without a display and without
pyplot's global state. Each function returns the paths it wrote, or an empty list when its data is
missing (the report says which figures were skipped and why).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.typing import RcKeyType

from analysis.runs.blocks import (
    DEFAULT_CONFIG,
    Block,
    baseline_method,
    default_key,
    default_method,
    environment_label,
    get_block,
    main_methods,
    number,
    report_blocks,
    scale_label,
)
from analysis.runs.cells import CellKey, CellResult, Plan, iterations_to_reach, mean_curve
from gaca.estimators.registry import estimator_color, estimator_label

STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}
VARIANT_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
"""Colours of an ablation block's rows in order; GACA with every default keeps its own (its spec's)."""
PANEL_SIZE = (3.4, 2.6)
PNG_DPI = 150


def save(figure: Figure, folder: Path, stem: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.pdf", folder / f"{stem}.png"]
    for path in paths:
        figure.savefig(path, dpi=PNG_DPI)
    return paths


def _main_settings(plan: Plan, cells: Mapping[CellKey, CellResult]) -> list[tuple[str, str]]:
    return [
        (env, scale)
        for env, scale in plan.settings(report_blocks().main)
        if any(cells[plan.cell(variant, env, scale)].n for variant in report_blocks().main.variants)
    ]


def _block_settings(plan: Plan, block: Block, cells: Mapping[CellKey, CellResult]) -> list[tuple[str, str]]:
    """The block's settings where at least one of its rows has runs."""
    return [
        (env, scale)
        for env, scale in plan.settings(block)
        if any(cells[plan.cell(variant, env, scale)].n for variant in block.variants)
    ]


def variant_colors(block: Block) -> dict[str, str]:
    """A colour per row of ``block``: the methods' own on the main block, GACA's red for the
    default configuration, a palette for the rest."""
    palette = iter(VARIANT_COLORS)
    if block is report_blocks().main:
        method_rows = {block.estimator(method).name: method for method in main_methods()}
        return {
            v.name: estimator_color(method_rows[v.name]) if v.name in method_rows else next(palette)
            for v in block.variants
        }
    default = default_key()
    return {
        variant.name: estimator_color(default_method()) if variant.key() == default else next(palette)
        for variant in block.variants
    }


def legend_columns(labels: Sequence[str], width_inches: float) -> int:
    """As many legend columns as fit the figure's width (about 14 characters an inch at 8 pt)."""
    longest = max(len(label) for label in labels) + 5  # the line sample and the gap
    return max(1, min(len(labels), int(width_inches * 14 / longest)))


def _legend(figure: Figure, block: Block, colors: Mapping[str, str]) -> None:
    handles = [Line2D([], [], color=colors[v.name], lw=2, label=v.label) for v in block.variants]
    columns = legend_columns([v.label for v in block.variants], figure.get_figwidth())
    figure.legend(handles=handles, loc="outside upper center", ncols=columns)


def learning_curves(
    plan: Plan, block: Block, cells: Mapping[CellKey, CellResult], curves: pd.DataFrame, folder: Path, stem: str
) -> list[Path]:
    """Evaluation success against iteration for every row of ``block`` (Figure 2(a, b) for the
    main block): mean over seeds with its 95% t band, one panel per environment (one row per scale).
    A row missing seeds or runs is noted in its panel."""
    settings = _block_settings(plan, block, cells)
    if not settings:
        return []
    environments = list(dict.fromkeys(env for env, _ in settings))
    scales = list(dict.fromkeys(scale for _, scale in settings))
    colors = variant_colors(block)
    width = max(PANEL_SIZE[0] * len(environments), 5.0)
    legend_rows = math.ceil(len(block.variants) / legend_columns([v.label for v in block.variants], width))
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, PANEL_SIZE[1] * len(scales) + 0.2 * legend_rows + 0.3), layout="constrained")
        axes = figure.subplots(len(scales), len(environments), squeeze=False, sharey=True)
        for row, scale in enumerate(scales):
            for column, env in enumerate(environments):
                axis = axes[row][column]
                axis.set_title(f"{environment_label(env)}\n{scale_label(scale)}")
                notes = []
                for variant in block.variants:
                    cell = cells[plan.cell(variant, env, scale)]
                    curve = mean_curve(cell, curves)
                    if curve.empty:
                        notes.append(f"{variant.name}: no runs")
                        continue
                    if not cell.complete:
                        notes.append(f"{variant.name}: {cell.n} of {cell.expected_seeds} seeds")
                    color = colors[variant.name]
                    axis.plot(curve["step"], 100 * curve["mean"], color=color)
                    if cell.n > 1:
                        axis.fill_between(
                            curve["step"], 100 * curve["low"], 100 * curve["high"], color=color, alpha=0.15, lw=0
                        )
                if notes:
                    axis.text(
                        0.98, 0.03, "\n".join(notes), ha="right", va="bottom", fontsize=7, transform=axis.transAxes
                    )
                axis.set_ylim(0, 100)
                axis.set_xlabel("iteration")
                if column == 0:
                    axis.set_ylabel("evaluation success (%)")
        _legend(figure, block, colors)
        return save(figure, folder, stem)


def seed_points(plan: Plan, block: Block, cells: Mapping[CellKey, CellResult], folder: Path, stem: str) -> list[Path]:
    """Every seed's score beside each row's mean and 95% t interval (``CellResult.interval``): final success and the
    area under the evaluation curve side by side for each setting, two settings to a row."""
    settings = _block_settings(plan, block, cells)
    if not settings:
        return []
    colors = variant_colors(block)
    width = max(PANEL_SIZE[0], 0.55 * len(block.variants) + 1.2)
    per_row = min(2, len(settings))
    rows = math.ceil(len(settings) / per_row)
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(2 * per_row * width, PANEL_SIZE[1] * rows + 0.4), layout="constrained")
        axes = figure.subplots(rows, 2 * per_row, squeeze=False)
        for axis in axes.flat[2 * len(settings) :]:
            axis.set_visible(False)
        panels = [(env, scale, measure) for env, scale in settings for measure in ("final", "auc")]
        for axis, (env, scale, measure) in zip(axes.flat, panels):
            for x, variant in enumerate(block.variants):
                cell = cells[plan.cell(variant, env, scale)]
                values = 100 * cell.values(measure)
                if cell.n == 0 or np.isnan(values).any():
                    axis.text(x, 2, "no runs", ha="center", va="bottom", fontsize=6, rotation=90)
                    continue
                color = colors[variant.name]
                offsets = np.linspace(-0.12, 0.12, cell.n) if cell.n > 1 else np.zeros(1)
                axis.scatter(x + 0.18 + offsets, values, s=12, color=color, alpha=0.7, lw=0)
                low, high = cell.interval(measure)
                mean = values.mean()
                if not math.isnan(low):
                    axis.errorbar(
                        [x - 0.12], [mean], yerr=[[mean - 100 * low], [100 * high - mean]], color=color, capsize=3
                    )
                axis.plot([x - 0.12], [mean], marker="D", ms=5, color=color)
                if not cell.complete:
                    axis.annotate(f"n={cell.n}", (x, 100), ha="center", va="top", fontsize=6)
            axis.set_xticks(range(len(block.variants)), [v.name for v in block.variants], rotation=30, ha="right")
            axis.set_xlim(-0.6, len(block.variants) - 0.4)
            axis.set_ylim(0, 102)
            axis.grid(axis="x", visible=False)
            axis.set_title(f"{'final success' if measure == 'final' else 'area under the curve'}, {env}/{scale}")
            axis.set_ylabel("success (%)")
        return save(figure, folder, stem)


def lambda0_sweep(plan: Plan, cells: Mapping[CellKey, CellResult], folder: Path) -> list[Path]:
    """Figure 2(c): final success against lambda0 with modulation off (mean +- std over seeds, each
    seed's point beside it), with the adaptive gate's result marked at its lambda0 (0.5) and as a
    dashed level across the sweep."""
    block = get_block("lambda0")
    if block not in plan.blocks:
        return []
    env, scale = plan.settings(block)[0]
    fixed = [v for v in block.variants if v.config()["algorithm.alpha_lambda"] == 0.0]
    points = [(number(v.config(), "algorithm.lambda0"), cells[plan.cell(v, env, scale)]) for v in fixed]
    points = [(x, cell) for x, cell in points if cell.n]
    adaptive = cells[plan.cell(report_blocks().main.default(), env, scale)]
    if not points and not adaptive.n:
        return []
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=PANEL_SIZE, layout="constrained")
        axis = figure.subplots()
        if points:
            xs = [x for x, _ in points]
            means = [100 * cell.mean for _, cell in points]
            stds = [0.0 if math.isnan(cell.std) else 100 * cell.std for _, cell in points]
            axis.errorbar(
                xs, means, yerr=stds, color=estimator_color("gigpo"), marker="o", capsize=3, label=r"fixed $\lambda_0$"
            )
            for x, cell in points:
                offsets = np.linspace(-0.02, 0.02, cell.n) if cell.n > 1 else np.zeros(1)
                axis.scatter(
                    x + 0.035 + offsets, 100 * cell.success, s=8, color=estimator_color("gigpo"), alpha=0.5, lw=0
                )
                if not cell.complete:
                    axis.annotate(
                        f"n={cell.n}", (x, 100 * cell.mean), textcoords="offset points", xytext=(6, -12), fontsize=7
                    )
        if adaptive.n:
            level = 100 * adaptive.mean
            axis.axhline(level, color=estimator_color("gaca"), ls="--", lw=1)
            label = "adaptive gate" + ("" if adaptive.complete else f" (n={adaptive.n})")
            axis.plot([0.5], [level], marker="*", ms=12, color=estimator_color("gaca"), ls="none", label=label)
        axis.set_xlabel(r"$\lambda_0$ (modulation off: $\alpha_\lambda = \beta_\lambda = 0$)")
        axis.set_ylabel("final success (%)")
        axis.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
        axis.set_xlim(-0.08, 1.08)
        axis.set_title(f"{environment_label(env)}\n{scale_label(scale)}")
        axis.legend(loc="lower center")
        return save(figure, folder, "fig2c_lambda0_sweep")


def gate_law(folder: Path, lambda0: float | None = None, strengths: Sequence[float] = (0.0, 0.5, 1.0)) -> list[Path]:
    """Figure 3: the gate lambda(c) of Eq. 7 for three modulation strengths alpha = beta, computed
    by the estimator's own ``gate_weight`` (imported here: torch is slow to import), at ``lambda0``
    (default: GACA's)."""
    import torch

    from gaca.estimators.gate import gate_weight

    lambda0 = number(DEFAULT_CONFIG, "algorithm.lambda0") if lambda0 is None else lambda0
    criticality = torch.linspace(0.0, 4.0, 401)
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=PANEL_SIZE, layout="constrained")
        axis = figure.subplots()
        for strength, style in zip(strengths, ("-", "--", "-.")):
            weight = gate_weight(criticality, lambda0, strength, strength)
            axis.plot(
                criticality.numpy(), weight.numpy(), ls=style, label=rf"$\alpha_\lambda = \beta_\lambda = {strength:g}$"
            )
        axis.axvline(1.0, color="0.6", lw=0.8, ls=":")
        axis.set_xlabel("criticality $c$")
        axis.set_ylabel(r"mixing weight $\lambda$")
        axis.set_ylim(-0.03, 1.05)
        axis.set_title(rf"Gate law (Eq. 7), $\lambda_0 = {lambda0:g}$")
        axis.legend(loc="lower right")
        return save(figure, folder, "fig3_gate_law")


def criticality_distribution(
    plan: Plan, block: Block, cells: Mapping[CellKey, CellResult], histograms: pd.DataFrame, folder: Path, stem: str
) -> list[Path]:
    """The distribution of the criticality score c over training for every GACA row of ``block``:
    the accumulated histograms of the seeds, summed, as a density, one line per row and setting.
    An overflow bin (``bin_right`` infinite) is drawn as a hatched last bin labelled ``>= left``."""
    if histograms.empty:
        return []
    lines = []
    colors = variant_colors(block)
    for env, scale in _block_settings(plan, block, cells):
        for variant in block.variants:
            cell = cells[plan.cell(variant, env, scale)]
            rows = histograms.loc[histograms["run_id"].isin(cell.run_ids)]
            if not rows.empty:
                lines.append((variant, env, scale, rows))
    if not lines:
        return []
    settings = list(dict.fromkeys((env, scale) for _, env, scale, _ in lines))
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(PANEL_SIZE[0] * 1.6, PANEL_SIZE[1] + 0.18 * len(lines) + 0.3), layout="constrained")
        axis = figure.subplots()
        overflow_at = None
        for variant, env, scale, rows in lines:
            summed = rows.groupby(["bin_left", "bin_right"], as_index=False)["count"].sum().sort_values("bin_left")
            left = summed["bin_left"].to_numpy(dtype=float)
            right = summed["bin_right"].to_numpy(dtype=float, copy=True)
            overflow = np.isinf(right)
            if overflow.any():  # as wide as the bin before it, so it can be seen
                right[overflow] = left[overflow] + (right[~overflow][-1] - left[~overflow][-1])
                overflow_at = (float(left[overflow][0]), float(right[overflow][0]))
            width = right - left
            counts = summed["count"].to_numpy(dtype=float)
            density = counts / (counts.sum() * width)
            centres = (left + right) / 2
            mean = np.average(centres, weights=counts)
            spread = math.sqrt(np.average((centres - mean) ** 2, weights=counts))
            where = f", {env}/{scale}" if len(settings) > 1 else ""
            label = f"{variant.label}{where}: std {spread:.2f} ({rows['run_id'].nunique()} runs)"
            style = ("-", "--", "-.", ":")[settings.index((env, scale)) % 4]  # colour: the row; style: the setting
            color = colors[variant.name]
            axis.stairs(
                density[~overflow],
                np.append(left[~overflow], right[~overflow][-1]),
                lw=1.2,
                ls=style,
                color=color,
                label=label,
            )
            if overflow.any():
                axis.stairs(
                    density[overflow],
                    [left[overflow][0], right[overflow][0]],
                    lw=1.2,
                    color=color,
                    hatch="///",
                    fill=False,
                )
        axis.axvline(1.0, color="0.4", lw=0.8, ls=":")
        occupied = histograms.loc[(histograms["count"] > 0) & np.isfinite(histograms["bin_right"]), "bin_right"]
        top = max(2.0, float(occupied.max()) + 0.25) if not occupied.empty else 2.0
        if overflow_at is not None:
            top = overflow_at[1] + 0.1
            axis.axvline(overflow_at[0], color="0.6", lw=0.6)
            axis.text(
                sum(overflow_at) / 2,
                0.98,
                f"≥ {overflow_at[0]:g}",
                ha="center",
                va="top",
                fontsize=7,
                transform=axis.get_xaxis_transform(),
            )
        axis.set_xlim(0.0, top)
        axis.set_xlabel("criticality $c$ (mean 1 in every trajectory)")
        axis.set_ylabel("density")
        figure.legend(loc="outside upper center")
        return save(figure, folder, stem)


def sample_efficiency_frame(plan: Plan, cells: Mapping[CellKey, CellResult], curves: pd.DataFrame) -> pd.DataFrame:
    """Per setting and method: iterations the seed-mean evaluation curve needs to reach GiGPO's peak
    (``target``, the maximum of GiGPO's mean curve), NaN where it never does; ``budget`` is the
    last evaluated iteration."""
    rows = []
    for env, scale in _main_settings(plan, cells):
        mean_curves = {
            method: mean_curve(cells[plan.cell(report_blocks().main.estimator(method), env, scale)], curves)
            for method in main_methods()
        }
        if mean_curves[baseline_method()].empty:
            continue
        target = float(mean_curves[baseline_method()]["mean"].max())
        for method, curve in mean_curves.items():
            if not curve.empty:
                rows.append(
                    {
                        "env": env,
                        "scale": scale,
                        "method": method,
                        "target": target,
                        "iterations": iterations_to_reach(curve, target),
                        "budget": float(curve["step"].max()),
                    }
                )
    return pd.DataFrame(rows, columns=["env", "scale", "method", "target", "iterations", "budget"])


def sample_efficiency(efficiency: pd.DataFrame, folder: Path) -> list[Path]:
    """Iterations each method needs to reach GiGPO's peak success, grouped by setting; a method that
    never reaches it within its budget gets a hatched bar up to the budget, marked "not reached"."""
    if efficiency.empty:
        return []
    settings = list(dict.fromkeys(zip(efficiency["env"], efficiency["scale"])))
    width = 0.8 / len(main_methods())
    top = float(efficiency["budget"].max())
    with matplotlib.rc_context(STYLE):
        figure = Figure(
            figsize=(max(PANEL_SIZE[0], 1.5 * len(settings) + 1.0), PANEL_SIZE[1] + 0.3), layout="constrained"
        )
        axis = figure.subplots()
        for offset, method in enumerate(main_methods()):
            for index, (env, scale) in enumerate(settings):
                row = efficiency.loc[
                    (efficiency["env"] == env) & (efficiency["scale"] == scale) & (efficiency["method"] == method)
                ]
                if row.empty:
                    continue
                x = index + (offset - 1) * width
                iterations = float(row["iterations"].iloc[0])
                if math.isnan(iterations):
                    budget = float(row["budget"].iloc[0])
                    axis.bar(x, budget, width, color="none", edgecolor=estimator_color(method), hatch="///", lw=0.8)
                    axis.text(x, budget, "not\nreached", ha="center", va="bottom", fontsize=6)
                else:
                    axis.bar(x, iterations, width, color=estimator_color(method))
                    axis.text(x, iterations, f"{iterations:g}", ha="center", va="bottom", fontsize=7)
        axis.set_xticks(range(len(settings)), [f"{env}\n{scale}" for env, scale in settings])
        axis.set_ylabel(f"iterations to {estimator_label(baseline_method())}'s peak")
        axis.set_ylim(0, top * 1.3)
        axis.grid(axis="x", visible=False)
        handles = [Patch(color=estimator_color(m), label=estimator_label(m)) for m in main_methods()]
        figure.legend(handles=handles, loc="outside upper center", ncols=len(main_methods()))
        return save(figure, folder, "sample_efficiency")
