"""The numbers in the generated LaTeX equal the known means and deviations of the logged runs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analysis.render import latex
from analysis.runs.blocks import report_blocks

MEAN_STD = re.compile(r"\$(?:\\mathbf\{)?(\d+\.\d+) \\pm (\d+\.\d+)")


def rows(tex: str) -> list[list[str]]:
    """The data rows of a booktabs table: cells split on '&', without the trailing '\\\\'."""
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule")[0]
    return [
        [cell.strip() for cell in re.split(r"(?<!\\)&", line.strip().removesuffix("\\\\"))]
        for line in body.splitlines()
        if " & " in line and not line.startswith(r"\multicolumn")
    ]


def expected(values: list[float]) -> tuple[str, str]:
    return f"{100 * np.mean(values):.2f}", f"{100 * np.std(values, ddof=1):.2f}"


def mean_std(cell: str) -> tuple[str, str]:
    found = MEAN_STD.search(cell)
    assert found, cell
    return found.group(1), found.group(2)


def table1(report) -> dict[tuple[str, str], list[str]]:
    """Table 1's rows by (environment, measure): each setting has a ``final`` and an ``AUC`` row."""
    found, env = {}, None
    for row in rows((report.out / "tables" / "table1_main.tex").read_text()):
        env = row[0] or env
        found[(env, row[2])] = row
    return found


def test_table1_has_the_known_means_and_stds(report, known):
    table = table1(report)
    assert set(table) == {(env, measure) for env in ("household", "shop") for measure in ("final", "AUC")}
    for env in ("household", "shop"):
        assert table[(env, "final")][1] == "tiny"
        for column, method in enumerate(("grpo", "gigpo", "gaca"), start=3):
            assert mean_std(table[(env, "final")][column]) == expected(known["main"][(method, env)]), (env, method)


def test_table1_gives_the_area_under_the_curve(report, known):
    # The synthetic curve is final x (0.3, 0.65, 1.0) at iterations 0, 5, 10: its mean is 0.65 x final.
    row = table1(report)[("household", "AUC")]
    assert mean_std(row[5]) == expected([0.65 * value for value in known["main"][("gaca", "household")]])


def test_table1_bolds_the_best_of_each_row_and_gives_the_paired_gain(report, known):
    for (env, measure), row in table1(report).items():
        assert [r"\mathbf" in cell for cell in row[3:6]] == [False, False, True]
        if measure != "final":
            continue
        gain = np.mean(known["main"][("gaca", env)]) - np.mean(known["main"][("gigpo", env)])
        assert row[7] == "n/e"  # 3 seeds: no exact test reaches 2.5% a side (2^-3), so no exact interval
        if env == "household":
            assert row[6] == f"${100 * gain:+.2f}$"  # paired by seed and task: no mark
            assert row[8] == "1.00 ($p = 0.05$)"
    tex = (report.out / "tables" / "table1_main.tex").read_text()
    assert "not the probability that GACA is better" in tex
    assert "fewer than 6 seeds has no exact 95" in tex


def test_a_partial_cell_shows_its_seed_count_and_pairs_on_the_shared_seeds(report, known):
    shop = table1(report)[("shop", "final")]
    assert shop[4].endswith("^{n=2}$")  # GiGPO: seed 2 has no final metric
    assert not any("n=" in cell for cell in (shop[3], shop[5]))
    gaca, gigpo = known["main"][("gaca", "shop")], known["main"][("gigpo", "shop")]
    assert shop[6] == f"${100 * np.mean(np.subtract(gaca[:2], gigpo)):+.2f}$"  # seeds 0 and 1


def test_a_power_line_follows_each_table(report):
    for name in ("table1_main", "table2_ablations"):
        tex = (report.out / "tables" / f"{name}.tex").read_text()
        after = tex.split(r"\end{tabular}")[1]
        assert "Power (80\\%, two-sided alpha 0.05" in after, name
        assert re.search(r"3 points needs \d+(-\d+)? seeds, 5 points needs \d+(-\d+)? seeds", after), name
    ablations = (report.out / "tables" / "table2_ablations.tex").read_text().split(r"\end{tabular}")[1]
    assert re.findall(r"\n(\w+), against GACA", ablations.replace(r"\_", "_")) == [
        "detector",
        "lambda0",
        "modulation",
        "alpha_c",
        "debias",
    ]


def test_table2_has_every_ablation_in_the_papers_layout(report, known):
    tex = (report.out / "tables" / "table2_ablations.tex").read_text()
    assert all(rf"\textit{{{block.title}}}" in tex for block in report_blocks().ablations)
    table = rows(tex)
    labels = [row[0].replace(r"$^\dagger$", "") for row in table]
    variants = {variant.name: variant for block in report_blocks().ablations for variant in block.variants}
    for name, (_, values) in known["ablations"].items():
        row = table[labels.index(variants[name].latex)]
        assert mean_std(row[1]) == expected(values), name


def test_table2_marks_partial_shared_and_missing_rows(report):
    table = {row[0]: row for row in rows((report.out / "tables" / "table2_ablations.tex").read_text())}
    uniform = table[r"uniform ($c \equiv 1$)$^\dagger$"]
    assert uniform[1].endswith("^{n=2}$")
    assert table[r"$\lambda_0 = 0.5$$^\dagger$"][1] == uniform[1]  # one shared result
    assert table[r"$\alpha_\lambda = \beta_\lambda = 0$$^\dagger$"][1] == uniform[1]
    assert table[r"$\lambda_0 = 0.75$"][1:] == ["---"] * 5
    assert table["entropy (GACA)"][4] == "(ref.)"
    assert uniform[4] == "$-6.25$"  # paired with GACA on seeds 0 and 1: 81.25 - 87.50 and 87.50 - 93.75
    assert r"\mathbf" in table["entropy (GACA)"][1]


def table7(report) -> dict[str, dict[str, list[str]]]:
    """Table 7's rows by group heading (``Main comparison (household, tiny)``) and row label."""
    groups: dict[str, dict[str, list[str]]] = {}
    heading = None
    tex = (report.out / "tables" / "table7_diagnostics.tex").read_text()
    for line in tex.split(r"\midrule", 1)[1].split(r"\bottomrule")[0].splitlines():
        found = re.match(r"\\multicolumn\{\d+\}\{l\}\{\\textit\{(.+)\}\} \\\\", line)
        if found:
            heading = found[1]
        elif " & " in line:
            row = [cell.strip() for cell in re.split(r"(?<!\\)&", line.strip().removesuffix("\\\\"))]
            groups.setdefault(heading, {})[row[0]] = row
    return groups


def test_table7_has_the_known_diagnostics_and_the_papers_row(report, known):
    groups = table7(report)
    gaca = groups["Main comparison (household, tiny)"]["GACA"]
    assert mean_std(gaca[1]) == (
        f"{np.mean(known['criticality_std']):.2f}",
        f"{np.std(known['criticality_std'], ddof=1):.2f}",
    )
    assert mean_std(gaca[4]) == ("0.20", "0.00")  # clamp fraction 0.002, in percent
    assert mean_std(gaca[5]) == ("85.0", "0.0")
    assert groups["Main comparison (shop, tiny)"]["GACA"][1].startswith("$0.30")
    assert rows((report.out / "tables" / "table7_diagnostics.tex").read_text())[-1] == [
        "Paper (ALFWorld / WebShop)",
        "0.31 / 0.27",
        "---",
        "0.08 / 0.07",
        "$<1$",
        "86 / 79",
    ]


def test_table7_shows_every_gaca_row_of_each_block(report):
    detector = table7(report)["Criticality detector (household, tiny)"]
    assert list(detector) == ["random (permuted entropy)", r"uniform ($c \equiv 1$)", "entropy (GACA)"]
    assert detector[r"uniform ($c \equiv 1$)"][1].endswith("^{n=2}$")


def test_cells_csv_agrees_with_the_tables(report, known):
    cells = pd.read_csv(report.out / "tables" / "cells.csv")
    random = cells.loc[(cells["block"] == "detector") & (cells["variant"] == "random")].iloc[0]
    assert random["mean"] == pytest.approx(np.mean(known["ablations"]["random"][1]))
    assert random["n_seeds"] == 3 and random["task_level_interval"]
    assert random["ci_low"] <= random["mean"] <= random["ci_high"]
    assert random["auc_mean"] == pytest.approx(0.65 * np.mean(known["ablations"]["random"][1]))
    uniform = cells.loc[(cells["block"] == "detector") & (cells["variant"] == "uniform")].iloc[0]
    assert (uniform["n_seeds"], uniform["expected_seeds"], str(uniform["missing_seeds"])) == (2, 3, "2")


def test_escaped_text_keeps_its_double_hyphens():
    """A reason such as "(--where)" must not be set as an en dash."""
    assert latex.escape("seed=1 (not 0) (--where); a-b ---") == r"seed=1 (not 0) (-{}-where); a-b -{}-{}-"


def test_a_block_of_one_seed_shows_no_interval_for_its_cells_or_differences():
    """One seed has no seed-level variance: each cell's interval and each difference's read n/e (a NaN
    half width was once clipped to [0, 100]), with the note saying why."""
    import math

    from analysis.render.tables import NOT_ESTIMABLE, ablation_table
    from analysis.runs.blocks import get_block
    from analysis.runs.cells import CellResult, Plan, empty_result

    blocks = report_blocks()
    plan = Plan((get_block("detector"),), scale="tiny")
    cells = {key: empty_result(key, (0,)) for key in plan.wanted()}
    for variant, rate in (("random", 0.3), ("uniform", 0.5), ("entropy", 0.9)):
        key = plan.cell(get_block("detector").variant(variant), blocks.ablation_environment, blocks.ablation_scale)
        outcomes = (pd.Series(np.r_[np.ones(round(rate * 128)), np.zeros(128 - round(rate * 128))]),)
        cells[key] = CellResult(key, (f"{variant}-0",), (0,), np.array([rate]), outcomes, expected=(0,))
        assert all(math.isnan(bound) for bound in cells[key].interval())
    tex = ablation_table(plan, cells, "final")
    assert tex is not None
    filled = [row for row in rows(tex) if row[1] != "---"]  # a row added to the block file has no run here
    assert len(filled) == 3 and len(rows(tex)) == len(get_block("detector").variants)
    for row in filled:
        assert row[2] == NOT_ESTIMABLE, row  # the cell's own interval
    assert f"{NOT_ESTIMABLE}: one seed, no interval" in tex
