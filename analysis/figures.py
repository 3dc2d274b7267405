"""The paper's figures as PDF (for LaTeX) and PNG (for a quick look).

Drawn with matplotlib's object API (``Figure``), which renders without a display and without
pyplot's global state. Each function returns the paths it wrote, or an empty list when its data is
missing (the report says which figures were skipped and why).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis.blocks import MAIN, METHOD_LABELS, METHODS, environment_label, get_block, scale_label
from analysis.cells import CellKey, CellResult, Plan, iterations_to_reach, mean_curve

STYLE = {
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
METHOD_COLORS = {"grpo": "#7f7f7f", "gigpo": "#1f77b4", "gaca": "#d62728"}
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
        for env, scale in plan.settings(MAIN)
        if any(cells[plan.cell(MAIN.variant(method), env, scale)].n for method in METHODS)
    ]


def _method_legend(figure: Figure) -> None:
    handles = [Line2D([], [], color=METHOD_COLORS[m], lw=2, label=METHOD_LABELS[m]) for m in METHODS]
    figure.legend(handles=handles, loc="outside upper center", ncols=len(METHODS))


def learning_curves(plan: Plan, cells: Mapping[CellKey, CellResult], curves: pd.DataFrame, folder: Path) -> list[Path]:
    """Figure 2(a, b): evaluation success against iteration for the three methods, mean over seeds
    with a +-1 std band, one panel per environment (one row per scale). A method with fewer seeds
    than expected is noted in its panel."""
    settings = _main_settings(plan, cells)
    if not settings:
        return []
    environments = list(dict.fromkeys(env for env, _ in settings))
    scales = list(dict.fromkeys(scale for _, scale in settings))
    with matplotlib.rc_context(STYLE):
        figure = Figure(
            figsize=(PANEL_SIZE[0] * len(environments), PANEL_SIZE[1] * len(scales) + 0.3), layout="constrained"
        )
        axes = figure.subplots(len(scales), len(environments), squeeze=False, sharey=True)
        for row, scale in enumerate(scales):
            for column, env in enumerate(environments):
                axis = axes[row][column]
                axis.set_title(f"{environment_label(env)}\n{scale_label(scale)}")
                notes = []
                for method in METHODS:
                    cell = cells[plan.cell(MAIN.variant(method), env, scale)]
                    curve = mean_curve(cell, curves)
                    if curve.empty:
                        notes.append(f"{METHOD_LABELS[method]}: no runs")
                        continue
                    if not cell.complete:
                        notes.append(f"{METHOD_LABELS[method]}: {cell.n} of {cell.expected_seeds} seeds")
                    mean, std = 100 * curve["mean"], 100 * curve["std"].fillna(0.0)
                    axis.plot(curve["step"], mean, color=METHOD_COLORS[method])
                    axis.fill_between(
                        curve["step"], mean - std, mean + std, color=METHOD_COLORS[method], alpha=0.2, lw=0
                    )
                if notes:
                    axis.text(
                        0.98, 0.03, "\n".join(notes), ha="right", va="bottom", fontsize=7, transform=axis.transAxes
                    )
                axis.set_ylim(0, 100)
                axis.set_xlabel("iteration")
                if column == 0:
                    axis.set_ylabel("evaluation success (%)")
        _method_legend(figure)
        return save(figure, folder, "fig2ab_learning_curves")


def lambda0_sweep(plan: Plan, cells: Mapping[CellKey, CellResult], folder: Path) -> list[Path]:
    """Figure 2(c): final success against lambda0 with modulation off (mean +- std over seeds), with
    the adaptive gate's result marked at its lambda0 (0.5) and as a dashed level across the sweep."""
    block = get_block("lambda0")
    if block not in plan.blocks:
        return []
    env, scale = plan.settings(block)[0]
    fixed = [v for v in block.variants if v.overrides.get("algorithm.alpha_lambda") == 0.0]
    points = [(float(v.overrides["algorithm.lambda0"]), cells[plan.cell(v, env, scale)]) for v in fixed]
    points = [(x, cell) for x, cell in points if cell.n]
    adaptive = cells[plan.cell(MAIN.variant("gaca"), env, scale)]
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
                xs, means, yerr=stds, color=METHOD_COLORS["gigpo"], marker="o", capsize=3, label=r"fixed $\lambda_0$"
            )
            for x, cell in points:
                if not cell.complete:
                    axis.annotate(
                        f"n={cell.n}", (x, 100 * cell.mean), textcoords="offset points", xytext=(6, -12), fontsize=7
                    )
        if adaptive.n:
            level = 100 * adaptive.mean
            axis.axhline(level, color=METHOD_COLORS["gaca"], ls="--", lw=1)
            label = "adaptive gate" + ("" if adaptive.complete else f" (n={adaptive.n})")
            axis.plot([0.5], [level], marker="*", ms=12, color=METHOD_COLORS["gaca"], ls="none", label=label)
        axis.set_xlabel(r"$\lambda_0$ (modulation off: $\alpha_\lambda = \beta_\lambda = 0$)")
        axis.set_ylabel("final success (%)")
        axis.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
        axis.set_xlim(-0.08, 1.08)
        axis.set_title(f"{environment_label(env)}\n{scale_label(scale)}")
        axis.legend(loc="lower center")
        return save(figure, folder, "fig2c_lambda0_sweep")


def gate_law(folder: Path, lambda0: float = 0.5, strengths: Sequence[float] = (0.0, 0.5, 1.0)) -> list[Path]:
    """Figure 3: the gate lambda(c) of Eq. 7 for three modulation strengths alpha = beta, computed
    by the estimator's own ``gate_weight`` (imported here: torch is slow to import)."""
    import torch

    from gaca.estimators.gate import gate_weight

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
    plan: Plan, cells: Mapping[CellKey, CellResult], histograms: pd.DataFrame, folder: Path
) -> list[Path]:
    """The distribution of the criticality score c over training (GACA, every default): the
    accumulated histograms of the seeds, summed, as a density, one line per setting."""
    if histograms.empty:
        return []
    lines = []
    for env, scale in _main_settings(plan, cells):
        cell = cells[plan.cell(MAIN.variant("gaca"), env, scale)]
        rows = histograms.loc[histograms["run_id"].isin(cell.run_ids)]
        if not rows.empty:
            lines.append((env, scale, rows))
    if not lines:
        return []
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(PANEL_SIZE[0] * 1.2, PANEL_SIZE[1] + 0.3), layout="constrained")
        axis = figure.subplots()
        for (env, scale, rows), style in zip(lines, ("-", "--", "-.", ":")):
            summed = rows.groupby(["bin_left", "bin_right"], as_index=False)["count"].sum()
            width = summed["bin_right"] - summed["bin_left"]
            density = summed["count"] / (summed["count"].sum() * width)
            centres = (summed["bin_left"] + summed["bin_right"]) / 2
            mean = np.average(centres, weights=summed["count"])
            spread = math.sqrt(np.average((centres - mean) ** 2, weights=summed["count"]))
            edges = np.append(summed["bin_left"].to_numpy(), summed["bin_right"].iloc[-1])
            label = f"{env}/{scale}: std {spread:.2f} ({rows['run_id'].nunique()} runs)"
            axis.stairs(density.to_numpy(), edges, lw=1.2, ls=style, label=label)
        axis.axvline(1.0, color="0.4", lw=0.8, ls=":")
        occupied = histograms.loc[histograms["count"] > 0, "bin_right"]
        axis.set_xlim(0.0, max(2.0, float(occupied.max()) + 0.25) if not occupied.empty else None)
        axis.set_xlabel("criticality $c$ (mean 1 in every trajectory)")
        axis.set_ylabel("density")
        figure.legend(loc="outside upper center")
        return save(figure, folder, "criticality_distribution")


def sample_efficiency_frame(plan: Plan, cells: Mapping[CellKey, CellResult], curves: pd.DataFrame) -> pd.DataFrame:
    """Per setting and method: iterations the seed-mean evaluation curve needs to reach GiGPO's peak
    (``target``, the maximum of GiGPO's mean curve), NaN where it never does; ``budget`` is the
    last evaluated iteration."""
    rows = []
    for env, scale in _main_settings(plan, cells):
        mean_curves = {
            method: mean_curve(cells[plan.cell(MAIN.variant(method), env, scale)], curves) for method in METHODS
        }
        if mean_curves["gigpo"].empty:
            continue
        target = float(mean_curves["gigpo"]["mean"].max())
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
    width = 0.8 / len(METHODS)
    top = float(efficiency["budget"].max())
    with matplotlib.rc_context(STYLE):
        figure = Figure(
            figsize=(max(PANEL_SIZE[0], 1.5 * len(settings) + 1.0), PANEL_SIZE[1] + 0.3), layout="constrained"
        )
        axis = figure.subplots()
        for offset, method in enumerate(METHODS):
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
                    axis.bar(x, budget, width, color="none", edgecolor=METHOD_COLORS[method], hatch="///", lw=0.8)
                    axis.text(x, budget, "not\nreached", ha="center", va="bottom", fontsize=6)
                else:
                    axis.bar(x, iterations, width, color=METHOD_COLORS[method])
                    axis.text(x, iterations, f"{iterations:g}", ha="center", va="bottom", fontsize=7)
        axis.set_xticks(range(len(settings)), [f"{env}\n{scale}" for env, scale in settings])
        axis.set_ylabel("iterations to GiGPO's peak")
        axis.set_ylim(0, top * 1.3)
        axis.grid(axis="x", visible=False)
        handles = [Patch(color=METHOD_COLORS[m], label=METHOD_LABELS[m]) for m in METHODS]
        figure.legend(handles=handles, loc="outside upper center", ncols=len(METHODS))
        return save(figure, folder, "sample_efficiency")
