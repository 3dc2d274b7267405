"""The paper's tables as booktabs LaTeX, ready for ``\\input``: Table 1 (main), 2 (ablations), 7 (diagnostics).

Success is shown in percent, mean +- sample std over seeds, with the area under the evaluation
curve (AUC: mean success over the run's evaluations) beside it. A cell missing a seed its block ran
carries a superscript ``n=k``; a cell without runs shows ``---``. Differences are paired by seed and
evaluation task unless marked (``PAIRING_MARKS``); a power line follows each table. Written by hand
rather than with ``DataFrame.style.to_latex``: Table 2 needs block headings and rules between
row groups, and all three share one look.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.claims.replay import repeated_interval
from analysis.render.latex import escape
from analysis.runs.blocks import (
    Block,
    baseline_method,
    default_method,
    environment_label,
    report_blocks,
    scale_label,
)
from analysis.runs.cells import CellKey, CellResult, Plan, compare
from analysis.stats import basic, sequential, signflip
from analysis.stats.comparison import PAIRED_SEEDS, PAIRED_TASKS, UNPAIRED, Comparison, power_line
from analysis.stats.sequential import Schedule
from gaca.contract import DIAGNOSTIC_METRICS
from gaca.estimators.registry import ESTIMATORS

NOT_RUN = "---"
DIAGNOSTIC_COLUMNS = tuple(
    zip(
        DIAGNOSTIC_METRICS,
        (r"$c$ spread", r"$\lambda$ mean", r"$\lambda$ std", r"at a clamp (\%)", r"non-singleton (\%)"),
        (1.0, 1.0, 1.0, 100.0, 100.0),
        (2, 2, 2, 2, 1),
    )
)
"""Table 7's columns: metric, heading, scale factor, decimals."""
PAPER_DIAGNOSTICS = dict(zip(DIAGNOSTIC_METRICS, ("0.31 / 0.27", NOT_RUN, "0.08 / 0.07", "$<1$", "86 / 79")))
"""The paper's Table 7 (ALFWorld / WebShop), Table 7's last row."""
PAIRING_MARKS = {PAIRED_TASKS: "", PAIRED_SEEDS: "^{s}", UNPAIRED: "^{u}"}
PAIRING_NOTES = {
    PAIRED_SEEDS: r"$^{s}$: paired by seed only (an AUC, or a final score without per-task outcomes)",
    UNPAIRED: r"$^{u}$: unpaired, the k-th seed of each cell paired (the cells share no seed; independent runs)",
}


def success(result: CellResult, bold: bool = False, measure: str = "final") -> str:
    """``$mean \\pm std$`` in percent, bold if asked, ``^{n=k}`` when the cell misses a seed its block ran."""
    values = result.values(measure)
    if result.n == 0 or np.isnan(values).any():
        return NOT_RUN
    mean, std = basic.mean_std(values)
    return _mean_std(100.0 * mean, 100.0 * std, 2, bold, result.n, result.expected_seeds)


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
    """``$+4.51$``, with the pairing's mark when it is not paired by seed and task."""
    if comparison is None:
        return NOT_RUN
    return f"${100 * comparison.estimate:+.2f}{PAIRING_MARKS[comparison.pairing]}$"


NOT_ESTIMABLE = "n/e"
"""A cell of one seed (no seed-level variance), or a difference with too few seeds for an exact interval."""


SEQUENTIAL_MARK = "^{s}"
SEQUENTIAL_NOTE = (
    r"$^{s}$: a block run in rounds until decided (its design in claims.md): $\Delta$'s interval is its "
    r"design's test inverted over its paired seeds, at the design's level and looks."
)
DELTA_INTERVAL = (
    r"its 95\% interval is the exact sign-flip test of the per-seed differences inverted (the shifts it keeps: "
    r"exact for a shift with symmetric noise), the test the claims' verdicts use"
)
"""What Tables 1 and 2 say of the interval of a difference."""


def difference_interval(comparison: Comparison | None, schedule: Schedule | None = None) -> str:
    """The interval of ``comparison`` by the test that decides the verdicts: the inverted fixed-n
    sign-flip test (``sequential.interval``); for a block run until decided (``schedule``), its
    design's (``claims.replay.repeated_interval``), marked. n/e where no exact test reaches 2.5% a side."""
    if comparison is None:
        return NOT_RUN
    if not signflip.reachable(comparison.seeds, (1.0 - basic.CONFIDENCE) / 2.0):
        return NOT_ESTIMABLE
    if schedule is None:
        low, high = sequential.interval(comparison.differences, 1.0 - basic.CONFIDENCE)
        return interval(low, high, signed=True)
    low, high, _ = repeated_interval(schedule, comparison)
    if math.isnan(low):
        return f"{NOT_RUN}${SEQUENTIAL_MARK}$"
    return f"$[{100 * low:+.2f}, {100 * high:+.2f}]{SEQUENTIAL_MARK}$"


def _pairing_notes(comparisons: Sequence[Comparison | None], cells: Sequence[CellResult] = ()) -> str:
    """The pairing marks used, and n/e when a difference or a cell (``cells``) has one seed."""
    pairings = {comparison.pairing for comparison in comparisons if comparison is not None}
    notes = [note for pairing, note in PAIRING_NOTES.items() if pairing in pairings]
    one_seed = any(cell.n == 1 for cell in cells)
    few = signflip.fewest_seeds((1.0 - basic.CONFIDENCE) / 2.0)
    if any(comparison is not None and comparison.seeds < few for comparison in comparisons):
        notes.append(
            f"{NOT_ESTIMABLE}: {'one seed, no interval for a cell; ' if one_seed else ''}"
            f"a difference over fewer than {few} seeds has no exact 95\\% interval ($2^{{-n}}$ above 2.5\\%)"
        )
    elif one_seed:
        notes.append(f"{NOT_ESTIMABLE}: one seed, no interval")
    return ("; ".join(notes) + ".") if notes else ""


def tabular(columns: str, header: Sequence[str], body: Sequence[Sequence[str] | str]) -> str:
    """A booktabs tabular; a string in ``body`` is a line written as is (a rule or a heading)."""
    lines = [rf"\begin{{tabular}}{{{columns}}}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
    lines += [row if isinstance(row, str) else " & ".join(row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def table(body: str, caption: str, label: str, after: Sequence[str] = ()) -> str:
    """A table float; ``after``: plain-text lines set in small type under the tabular (the power line)."""
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small", rf"\caption{{{caption}}}", rf"\label{{{label}}}", body]
    if after:
        lines += [r"\par\smallskip", r"\begin{minipage}{0.95\linewidth}\footnotesize"]
        lines += [escape(line) + r"\par" for line in after]
        lines.append(r"\end{minipage}")
    lines += [r"\end{table}", ""]
    return "\n".join(lines)


def _best(results: Sequence[CellResult], measure: str = "final") -> float:
    means = [float(np.mean(result.values(measure))) for result in results if result.n > 0]
    means = [mean for mean in means if not math.isnan(mean)]
    return max(means) if means else math.nan


def _is_best(result: CellResult, best: float, measure: str = "final") -> bool:
    return result.n > 0 and math.isclose(float(np.mean(result.values(measure))), best, abs_tol=1e-12)


def _footnote(cells: Sequence[CellResult]) -> str:
    notes = []
    if any(cell.n not in (0, cell.expected_seeds) for cell in cells):
        notes.append(r"$^{n=k}$: over $k$ seeds, fewer than its block ran")
    if any(cell.n == 0 for cell in cells):
        notes.append(f"{NOT_RUN}: not run")
    return ("; ".join(notes) + ".") if notes else ""


def main_table(plan: Plan, cells: Mapping[CellKey, CellResult], selection: str) -> str | None:
    """Table 1: per environment x scale a row of final success and a row of AUC, GRPO / GiGPO / GACA
    columns, best per row in bold, and the gain of GACA over GiGPO with its 95% interval and
    probability of improvement. None if no runs."""
    body: list[Sequence[str] | str] = []
    shown: list[CellResult] = []
    gains: dict[str, list[Comparison | None]] = {"final": [], "auc": []}
    previous_env = None
    main = report_blocks().main
    for env, scale in plan.settings(main):
        row_cells = [cells[plan.cell(variant, env, scale)] for variant in main.variants]
        default, baseline = (
            cells[plan.cell(main.estimator(m), env, scale)] for m in (default_method(), baseline_method())
        )
        if all(cell.n == 0 for cell in row_cells):
            continue
        shown += row_cells
        for measure, label in (("final", "final"), ("auc", "AUC")):
            best = _best(row_cells, measure)
            gain = compare(default, baseline, measure)
            gains[measure].append(gain)
            first = measure == "final"
            body.append(
                [
                    escape(env) if first and env != previous_env else "",
                    escape(scale) if first else "",
                    label,
                    *(success(cell, _is_best(cell, best, measure), measure) for cell in row_cells),
                    difference(gain),
                    difference_interval(gain),
                    NOT_RUN if gain is None else f"{gain.probability_of_improvement:.2f} ($p = {gain.p_value:.2f}$)",
                ]
            )
        previous_env = env
    if not body:
        return None
    ours, theirs = (main.estimator(method).latex for method in (default_method(), baseline_method()))
    header = [
        "Environment",
        "Scale",
        "",
        *(variant.latex for variant in main.variants),
        r"$\Delta$",
        r"95\% CI of $\Delta$",
        rf"$P(\mathrm{{{ours}}} > \mathrm{{{theirs}}})$",
    ]
    caption = (
        rf"Evaluation success (\%), final: {_selection_text(selection)}; AUC: mean over the run's evaluations "
        r"(area under the evaluation curve); mean $\pm$ std over seeds. "
        rf"Best per row in bold. $\Delta$: {ours} minus {theirs} in points, paired by seed; " + DELTA_INTERVAL + ". "
        rf"$P$: the fraction of seed pairs in which {ours} scores higher (ties half), with the one-sided exact "
        rf"Mann-Whitney $p$ of that ranking; not the probability that {ours} is better. "
        + _pairing_notes(gains["final"] + gains["auc"])
        + " "
        + _analogues(plan.settings(report_blocks().main))
        + " "
        + _footnote(shown)
    )
    after = []
    for measure, name in (("final", "Final success"), ("auc", "AUC")):
        measured = [gain for gain in gains[measure] if gain is not None]
        if measured:
            after.append(f"{name}: {power_line(measured)}")
    return table(tabular("lll" + "c" * (len(header) - 3), header, body), caption.strip(), "tab:main", after)


def ablation_table(
    plan: Plan,
    cells: Mapping[CellKey, CellResult],
    selection: str,
    schedules: Mapping[str, Schedule] | None = None,
) -> str | None:
    """Table 2: one block of rows per requested ablation, best per block in bold, each row with its
    95% interval, its AUC and its difference from GACA with every default (and that difference's
    interval: the repeated interval of its design for a block in ``schedules``, run until
    decided); a power line per block under the table. None if no ablation is requested."""
    blocks = [block for block in plan.blocks if block in report_blocks().ablations]
    if not blocks:
        return None
    env, scale = plan.settings(blocks[0])[0]
    reference = cells.get(plan.cell(report_blocks().main.default(), env, scale))
    ours = report_blocks().main.default().latex
    shared = _shared_keys(plan, blocks, env, scale)
    body: list[Sequence[str] | str] = []
    shown: list[CellResult] = []
    all_gains: list[Comparison | None] = []
    after = []
    for index, block in enumerate(blocks):
        if index:
            body.append(r"\midrule")
        body.append(rf"\multicolumn{{6}}{{l}}{{\textit{{{block.title}}}}} \\")
        block_cells = [cells[plan.cell(variant, env, scale)] for variant in block.variants]
        schedule = (schedules or {}).get(block.name)
        shown += block_cells
        best = _best(block_cells)
        gains = []
        for variant, cell in zip(block.variants, block_cells):
            is_reference = reference is not None and cell.key == reference.key
            gain = None if is_reference or reference is None else compare(cell, reference)
            gains.append(gain)
            body.append(
                [
                    variant.latex + (r"$^\dagger$" if cell.key in shared else ""),
                    success(cell, _is_best(cell, best)),
                    interval(*cell.interval()) if cell.n > 1 else (NOT_ESTIMABLE if cell.n else NOT_RUN),
                    success(cell, measure="auc"),
                    "(ref.)" if is_reference else difference(gain),
                    "" if is_reference else difference_interval(gain, schedule),
                ]
            )
        measured = [gain for gain in gains if gain is not None]
        all_gains += gains
        if measured:
            after.append(f"{block.name}, against {ours}: {power_line(measured)}")
    header = ["Variant", r"Success (\%)", r"95\% CI", r"AUC (\%)", rf"$\Delta$ vs {ours}", r"95\% CI of $\Delta$"]
    notes = [
        rf"Ablations on {escape(environment_label(env))} at scale {escape(scale_label(scale))}: "
        rf"evaluation success (\%, {_selection_text(selection)}), mean $\pm$ std over seeds, best per block in bold, "
        r"95\% t interval over seeds, never narrower than the task-level one; AUC: mean success over the run's "
        r"evaluations; "
        rf"$\Delta$: points against {ours} with every default, paired by seed; " + DELTA_INTERVAL + ".",
        _pairing_notes(all_gains, shown),
    ]
    if any(block.name in (schedules or {}) for block in blocks):
        notes.append(SEQUENTIAL_NOTE)
    if shared:
        notes.append(
            r"$^\dagger$: one configuration (the fixed weight $\lambda = \lambda_0$), "
            r"one shared result shown in each place."
        )
    notes.append(_footnote(shown))
    return table(tabular("lccccc", header, body), " ".join(n for n in notes if n), "tab:ablations", after)


def _shared_keys(plan: Plan, blocks: Sequence[Block], env: str, scale: str) -> set[CellKey]:
    """Cells other than GACA's default that appear in more than one requested block."""
    default = plan.cell(report_blocks().main.default(), env, scale)
    owners: dict[CellKey, set[str]] = {}
    for block in blocks:
        for variant in block.variants:
            owners.setdefault(plan.cell(variant, env, scale), set()).add(block.name)
    return {key for key, names in owners.items() if len(names) > 1 and key != default}


def diagnostics_rows(plan: Plan) -> list[tuple[Block, str, str, list[tuple[str, CellKey]]]]:
    """Table 7's row groups: per requested block and setting, its GACA rows (label, cell)."""
    groups = []
    for block in plan.blocks:
        for env, scale in plan.settings(block):
            rows = [
                (variant.latex, plan.cell(variant, env, scale))
                for variant in block.variants
                if ESTIMATORS.spec(str(variant.config()["algorithm.method"])).gated
            ]
            groups.append((block, env, scale, rows))
    return groups


def diagnostics_table(plan: Plan, cells: Mapping[CellKey, CellResult], diagnostics: pd.DataFrame) -> str | None:
    """Table 7: the gate diagnostics of every GACA row of the requested blocks, each averaged over
    training per run, then mean +- std over seeds, and the paper's values as the last row. None when
    no GACA run logged them."""
    if diagnostics.empty:
        return None
    body: list[Sequence[str] | str] = []
    for block, env, scale, rows in diagnostics_rows(plan):
        group = []
        for label, key in rows:
            cell = cells[key]
            logged = diagnostics.loc[diagnostics["run_id"].isin(cell.run_ids)]
            if logged.empty:
                continue
            entries = []
            for metric, _, factor, decimals in DIAGNOSTIC_COLUMNS:
                values = logged.loc[logged["metric"] == metric, "value"].to_numpy() * factor
                if values.size == 0:
                    entries.append(NOT_RUN)
                    continue
                mean, std = basic.mean_std(values)
                entries.append(_mean_std(mean, std, decimals, False, values.size, cell.expected_seeds))
            group.append([label, *entries])
        if group:
            heading = f"{block.title} ({escape(env)}, {escape(scale)})"
            body += [r"\midrule"] if body else []
            body += [rf"\multicolumn{{{len(DIAGNOSTIC_COLUMNS) + 1}}}{{l}}{{\textit{{{heading}}}}} \\", *group]
    if not body:
        return None
    body += [r"\midrule", ["Paper (ALFWorld / WebShop)", *(PAPER_DIAGNOSTICS[m] for m, _, _, _ in DIAGNOSTIC_COLUMNS)]]
    header = ["Row", *(heading for _, heading, _, _ in DIAGNOSTIC_COLUMNS)]
    caption = (
        r"Gate diagnostics of the GACA rows, each averaged over training per run, mean $\pm$ std over seeds: "
        r"the spread (std) of the criticality $c$, mean and std of $\lambda$, steps with $\lambda$ at 0 or 1, "
        r"and steps in a non-singleton anchor group. The last row gives the paper's values "
        r"(ALFWorld / WebShop; clamped: under 1\%). " + _analogues(plan.settings(report_blocks().main))
    )
    return table(tabular("l" + "c" * len(DIAGNOSTIC_COLUMNS), header, body), caption, "tab:diagnostics")


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
                auc_mean, auc_std = basic.mean_std(cell.values("auc"))
                rows.append(
                    {
                        "block": block.name,
                        "variant": variant.name,
                        "env": env,
                        "scale": scale,
                        "n_seeds": cell.n,
                        "expected_seeds": cell.expected_seeds,
                        "missing_seeds": " ".join(map(str, cell.missing_seeds)),
                        "seeds": " ".join(map(str, cell.seeds)),
                        "mean": cell.mean,
                        "std": cell.std,
                        "ci_low": low,
                        "ci_high": high,
                        "task_level_interval": cell.task_success is not None,
                        "auc_mean": auc_mean,
                        "auc_std": auc_std,
                        "run_ids": " ".join(cell.run_ids),
                    }
                )
    return pd.DataFrame(rows)


def write_tables(
    plan: Plan,
    cells: Mapping[CellKey, CellResult],
    diagnostics: pd.DataFrame,
    selection: str,
    folder: Path,
    schedules: Mapping[str, Schedule] | None = None,
) -> list[Path]:
    """Write the tables that have data to ``folder`` and return their paths (``.tex`` and ``cells.csv``);
    ``schedules``: the designs of the blocks run until decided."""
    folder.mkdir(parents=True, exist_ok=True)
    contents: dict[str, str | None] = {}
    if report_blocks().main in plan.blocks:
        contents["table1_main.tex"] = main_table(plan, cells, selection)
    contents["table2_ablations.tex"] = ablation_table(plan, cells, selection, schedules)
    contents["table7_diagnostics.tex"] = diagnostics_table(plan, cells, diagnostics)
    written = []
    for name, text in contents.items():
        if text is not None:
            (folder / name).write_text(text)
            written.append(folder / name)
    cells_frame(plan, cells).to_csv(folder / "cells.csv", index=False)
    written.append(folder / "cells.csv")
    return written
