"""The paper's tables as booktabs LaTeX, ready for ``\\input``: Table 1 (main), 2 (ablations), 7 (diagnostics).

Success is shown in percent, mean +- sample std over seeds. A cell with a number of seeds other
than expected carries a superscript ``n=k``; a cell without runs shows ``---``. Written by hand
rather than with ``DataFrame.style.to_latex``: Table 2 needs block headings and rules between
row groups, and all three share one look.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from analysis.blocks import ABLATIONS, MAIN, METHOD_LABELS, METHODS, Block, environment_label, scale_label
from analysis.cells import CellKey, CellResult, Comparison, Plan, compare
from analysis.latex import escape

NOT_RUN = "---"
DIAGNOSTIC_COLUMNS = (
    ("diag/criticality_std", r"$c$ spread", 1.0, 2),
    ("diag/lambda_mean", r"$\lambda$ mean", 1.0, 2),
    ("diag/lambda_std", r"$\lambda$ std", 1.0, 2),
    ("diag/clamp_frac", r"at a clamp (\%)", 100.0, 2),
    ("diag/nonsingleton_frac", r"non-singleton (\%)", 100.0, 1),
)
"""Table 7's columns: metric, heading, scale factor, decimals."""


def success(result: CellResult, bold: bool = False) -> str:
    """``$mean \\pm std$`` in percent, bold if asked, ``^{n=k}`` when the seed count is not the expected one."""
    if result.n == 0:
        return NOT_RUN
    return _mean_std(100.0 * result.mean, 100.0 * result.std, 2, bold, result.n, result.expected_seeds)


def _mean_std(mean: float, std: float, decimals: int, bold: bool, n: int, expected: int) -> str:
    text = f"{mean:.{decimals}f}" if math.isnan(std) else f"{mean:.{decimals}f} \\pm {std:.{decimals}f}"
    if bold:
        text = rf"\mathbf{{{text}}}"
    if n != expected:
        text += f"^{{n={n}}}"
    return f"${text}$"


def interval(low: float, high: float, signed: bool = False) -> str:
    if math.isnan(low):
        return NOT_RUN
    sign = "+" if signed else ""
    return f"$[{100 * low:{sign}.2f}, {100 * high:{sign}.2f}]$"


def difference(comparison: Comparison | None) -> str:
    return NOT_RUN if comparison is None else f"${100 * comparison.estimate:+.2f}$"


def tabular(columns: str, header: Sequence[str], body: Sequence[Sequence[str] | str]) -> str:
    """A booktabs tabular; a string in ``body`` is a line written as is (a rule or a heading)."""
    lines = [rf"\begin{{tabular}}{{{columns}}}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
    lines += [row if isinstance(row, str) else " & ".join(row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def table(body: str, caption: str, label: str) -> str:
    return "\n".join(
        [
            r"\begin{table}[htbp]",
            r"\centering",
            r"\small",
            rf"\caption{{{caption}}}",
            rf"\label{{{label}}}",
            body,
            r"\end{table}",
            "",
        ]
    )


def _best(results: Sequence[CellResult]) -> float:
    means = [result.mean for result in results if result.n > 0]
    return max(means) if means else math.nan


def _is_best(result: CellResult, best: float) -> bool:
    return result.n > 0 and math.isclose(result.mean, best, abs_tol=1e-12)


def _footnote(cells: Sequence[CellResult]) -> str:
    notes = []
    if any(cell.n not in (0, cell.expected_seeds) for cell in cells):
        notes.append(rf"$^{{n=k}}$: over $k$ seeds, not the {cells[0].expected_seeds} expected")
    if any(cell.n == 0 for cell in cells):
        notes.append(f"{NOT_RUN}: not run")
    return ("; ".join(notes) + ".") if notes else ""


def main_table(plan: Plan, cells: Mapping[CellKey, CellResult], selection: str) -> str | None:
    """Table 1: environment x scale rows, GRPO / GiGPO / GACA columns, best per row in bold, and the
    gain of GACA over GiGPO with its 95% interval and probability of improvement. None if no runs."""
    body: list[Sequence[str] | str] = []
    shown: list[CellResult] = []
    previous_env = None
    for env, scale in plan.settings(MAIN):
        row_cells = [cells[plan.cell(MAIN.variant(method), env, scale)] for method in METHODS]
        if all(cell.n == 0 for cell in row_cells):
            continue
        shown += row_cells
        best = _best(row_cells)
        gain = compare(row_cells[2], row_cells[1])
        body.append(
            [
                escape(env) if env != previous_env else "",
                escape(scale),
                *(success(cell, _is_best(cell, best)) for cell in row_cells),
                difference(gain),
                NOT_RUN if gain is None else interval(gain.low, gain.high, signed=True),
                NOT_RUN if gain is None else f"{gain.probability_of_improvement:.2f}",
            ]
        )
        previous_env = env
    if not body:
        return None
    header = [
        "Environment",
        "Scale",
        *(METHOD_LABELS[m] for m in METHODS),
        r"$\Delta$",
        r"95\% CI of $\Delta$",
        r"$P(\mathrm{GACA} > \mathrm{GiGPO})$",
    ]
    caption = (
        rf"Evaluation success (\%, {_selection_text(selection)}), mean $\pm$ std over seeds. "
        r"Best per row in bold. $\Delta$: GACA minus GiGPO in points, with a 95\% bootstrap interval "
        r"(seeds, then evaluation tasks) and the probability of improvement over seeds. "
        + _analogues(plan.settings(MAIN))
        + " "
        + _footnote(shown)
    )
    return table(tabular("ll" + "c" * (len(header) - 2), header, body), caption.strip(), "tab:main")


def ablation_table(plan: Plan, cells: Mapping[CellKey, CellResult], selection: str) -> str | None:
    """Table 2: one block of rows per requested ablation, best per block in bold, each row with its
    95% interval and its difference from GACA with every default. None if no ablation is requested."""
    blocks = [block for block in plan.blocks if block in ABLATIONS]
    if not blocks:
        return None
    env, scale = plan.settings(blocks[0])[0]
    reference = cells.get(plan.cell(MAIN.variant("gaca"), env, scale))
    shared = _shared_keys(plan, blocks, env, scale)
    body: list[Sequence[str] | str] = []
    shown: list[CellResult] = []
    for index, block in enumerate(blocks):
        if index:
            body.append(r"\midrule")
        body.append(rf"\multicolumn{{4}}{{l}}{{\textit{{{block.title}}}}} \\")
        block_cells = [cells[plan.cell(variant, env, scale)] for variant in block.variants]
        shown += block_cells
        best = _best(block_cells)
        for variant, cell in zip(block.variants, block_cells):
            is_reference = reference is not None and cell.key == reference.key
            body.append(
                [
                    variant.latex + (r"$^\dagger$" if cell.key in shared else ""),
                    success(cell, _is_best(cell, best)),
                    interval(*cell.interval()) if cell.n else NOT_RUN,
                    "(ref.)" if is_reference else difference(compare(cell, reference) if reference else None),
                ]
            )
    header = ["Variant", r"Success (\%)", r"95\% CI", r"$\Delta$ vs GACA"]
    notes = [
        rf"Ablations on {escape(environment_label(env))} at scale {escape(scale_label(scale))}: "
        rf"evaluation success (\%, {_selection_text(selection)}), mean $\pm$ std over seeds, best per block in bold, "
        r"95\% bootstrap interval over seeds and evaluation tasks; $\Delta$: points against GACA with every default."
    ]
    if shared:
        notes.append(
            r"$^\dagger$: one configuration (the fixed weight $\lambda = \lambda_0$), "
            r"one shared result shown in each place."
        )
    notes.append(_footnote(shown))
    return table(tabular("lccc", header, body), " ".join(n for n in notes if n), "tab:ablations")


def _shared_keys(plan: Plan, blocks: Sequence[Block], env: str, scale: str) -> set[CellKey]:
    """Cells other than GACA's default that appear in more than one requested block."""
    default = plan.cell(MAIN.variant("gaca"), env, scale)
    owners: dict[CellKey, set[str]] = {}
    for block in blocks:
        for variant in block.variants:
            owners.setdefault(plan.cell(variant, env, scale), set()).add(block.name)
    return {key for key, names in owners.items() if len(names) > 1 and key != default}


def diagnostics_table(plan: Plan, cells: Mapping[CellKey, CellResult], diagnostics: pd.DataFrame) -> str | None:
    """Table 7: GACA's gate diagnostics per environment (and scale), each averaged over training
    per run, then mean +- std over seeds. None when no GACA run logged them."""
    if diagnostics.empty:
        return None
    body: list[Sequence[str]] = []
    for env, scale in plan.settings(MAIN):
        cell = cells[plan.cell(MAIN.variant("gaca"), env, scale)]
        rows = diagnostics.loc[(diagnostics["env"] == env) & (diagnostics["scale"] == scale)]
        if rows.empty:
            continue
        entries = []
        for metric, _, factor, decimals in DIAGNOSTIC_COLUMNS:
            values = rows.loc[rows["metric"] == metric, "value"].to_numpy() * factor
            if values.size == 0:
                entries.append(NOT_RUN)
                continue
            std = values.std(ddof=1) if values.size > 1 else math.nan
            entries.append(_mean_std(values.mean(), std, decimals, False, values.size, cell.expected_seeds))
        body.append([escape(env), escape(scale), *entries])
    if not body:
        return None
    header = ["Environment", "Scale", *(heading for _, heading, _, _ in DIAGNOSTIC_COLUMNS)]
    caption = (
        r"Gate diagnostics of GACA (every default), each averaged over training, mean $\pm$ std over seeds: "
        r"the spread (std) of the criticality $c$, mean and std of $\lambda$, steps with $\lambda$ at 0 or 1, "
        r"and steps in a non-singleton anchor group. " + _analogues(plan.settings(MAIN))
    )
    return table(tabular("ll" + "c" * len(DIAGNOSTIC_COLUMNS), header, body), caption, "tab:diagnostics")


def _selection_text(selection: str) -> str:
    return "final evaluation" if selection == "final" else "best evaluation so far"


def _analogues(settings: Sequence[tuple[str, str]]) -> str:
    names = sorted({env for env, _ in settings}) + sorted({scale for _, scale in settings})
    labels = [
        escape(label) for name in names for label in (environment_label(name), scale_label(name)) if label != name
    ]
    return ("Names: " + "; ".join(sorted(set(labels))) + ".") if labels else ""


def cells_frame(plan: Plan, cells: Mapping[CellKey, CellResult]) -> pd.DataFrame:
    """Every requested cell as one row (block, variant, env, scale, seeds, mean, std, 95% interval,
    run ids): the numbers behind the tables, for scripts and checks."""
    rows = []
    for block in plan.blocks:
        for env, scale in plan.settings(block):
            for variant in block.variants:
                cell = cells[plan.cell(variant, env, scale)]
                low, high = cell.interval() if cell.n else (math.nan, math.nan)
                rows.append(
                    {
                        "block": block.name,
                        "variant": variant.name,
                        "env": env,
                        "scale": scale,
                        "n_seeds": cell.n,
                        "expected_seeds": cell.expected_seeds,
                        "seeds": " ".join(map(str, cell.seeds)),
                        "mean": cell.mean,
                        "std": cell.std,
                        "ci_low": low,
                        "ci_high": high,
                        "task_level_interval": cell.task_success is not None,
                        "run_ids": " ".join(cell.run_ids),
                    }
                )
    return pd.DataFrame(rows)


def write_tables(
    plan: Plan, cells: Mapping[CellKey, CellResult], diagnostics: pd.DataFrame, selection: str, folder: Path
) -> list[Path]:
    """Write the tables that have data to ``folder`` and return their paths (``.tex`` and ``cells.csv``)."""
    folder.mkdir(parents=True, exist_ok=True)
    contents: dict[str, str | None] = {}
    if MAIN in plan.blocks:
        contents["table1_main.tex"] = main_table(plan, cells, selection)
        contents["table7_diagnostics.tex"] = diagnostics_table(plan, cells, diagnostics)
    contents["table2_ablations.tex"] = ablation_table(plan, cells, selection)
    written = []
    for name, text in contents.items():
        if text is not None:
            (folder / name).write_text(text)
            written.append(folder / name)
    cells_frame(plan, cells).to_csv(folder / "cells.csv", index=False)
    written.append(folder / "cells.csv")
    return written
