"""The numbers in the generated LaTeX equal the known means and deviations of the logged runs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analysis.blocks import ABLATIONS

MEAN_STD = re.compile(r"\$(?:\\mathbf\{)?(\d+\.\d+) \\pm (\d+\.\d+)")


def rows(tex: str) -> list[list[str]]:
    """The data rows of a booktabs table: cells split on '&', without the trailing '\\\\'."""
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule")[0]
    return [
        [cell.strip() for cell in line.rstrip("\\ ").split(" & ")]
        for line in body.splitlines()
        if " & " in line and not line.startswith(r"\multicolumn")
    ]


def expected(values: list[float]) -> tuple[str, str]:
    return f"{100 * np.mean(values):.2f}", f"{100 * np.std(values, ddof=1):.2f}"


def mean_std(cell: str) -> tuple[str, str]:
    found = MEAN_STD.search(cell)
    assert found, cell
    return found.group(1), found.group(2)


def test_table1_has_the_known_means_and_stds(report, known):
    table = rows((report.out / "tables" / "table1_main.tex").read_text())
    by_env = {row[0]: row for row in table}
    assert set(by_env) == {"household", "shop"}
    for env, row in by_env.items():
        assert row[1] == "tiny"
        for column, method in enumerate(("grpo", "gigpo", "gaca"), start=2):
            assert mean_std(row[column]) == expected(known["main"][(method, env)]), (env, method)


def test_table1_bolds_the_best_of_each_row_and_gives_the_gain(report, known):
    for row in rows((report.out / "tables" / "table1_main.tex").read_text()):
        assert [r"\mathbf" in cell for cell in row[2:5]] == [False, False, True]
        gain = np.mean(known["main"][("gaca", row[0])]) - np.mean(known["main"][("gigpo", row[0])])
        assert row[5] == f"${100 * gain:+.2f}$"
        low, high = map(float, re.findall(r"[-+]\d+\.\d+", row[6]))
        assert low < 100 * gain < high


def test_a_partial_cell_shows_its_seed_count(report):
    shop = [row for row in rows((report.out / "tables" / "table1_main.tex").read_text()) if row[0] == "shop"][0]
    assert shop[3].endswith("^{n=2}$")  # GiGPO: seed 2 has no final metric
    assert not any("n=" in cell for cell in (shop[2], shop[4]))


def test_table2_has_every_ablation_in_the_papers_layout(report, known):
    tex = (report.out / "tables" / "table2_ablations.tex").read_text()
    assert all(rf"\textit{{{block.title}}}" in tex for block in ABLATIONS)
    table = rows(tex)
    labels = [row[0].replace(r"$^\dagger$", "") for row in table]
    variants = {variant.name: variant for block in ABLATIONS for variant in block.variants}
    for name, (_, values) in known["ablations"].items():
        row = table[labels.index(variants[name].latex)]
        assert mean_std(row[1]) == expected(values), name


def test_table2_marks_partial_shared_and_missing_rows(report):
    table = {row[0]: row for row in rows((report.out / "tables" / "table2_ablations.tex").read_text())}
    uniform = table[r"uniform ($c \equiv 1$)$^\dagger$"]
    assert uniform[1].endswith("^{n=2}$")
    assert table[r"$\lambda_0 = 0.5$$^\dagger$"][1] == uniform[1]  # one shared result
    assert table[r"$\alpha_\lambda = \beta_\lambda = 0$$^\dagger$"][1] == uniform[1]
    assert table[r"$\lambda_0 = 0.75$"][1:] == ["---", "---", "---"]
    assert table["entropy (GACA)"][3] == "(ref.)"
    assert r"\mathbf" in table["entropy (GACA)"][1]


def test_table7_has_the_known_diagnostics(report, known):
    table = {row[0]: row for row in rows((report.out / "tables" / "table7_diagnostics.tex").read_text())}
    assert mean_std(table["household"][2]) == (
        f"{np.mean(known['criticality_std']):.2f}",
        f"{np.std(known['criticality_std'], ddof=1):.2f}",
    )
    assert mean_std(table["household"][5]) == ("0.20", "0.00")  # clamp fraction 0.002, in percent
    assert mean_std(table["household"][6]) == ("85.0", "0.0")


def test_cells_csv_agrees_with_the_tables(report, known):
    cells = pd.read_csv(report.out / "tables" / "cells.csv")
    random = cells.loc[(cells["block"] == "detector") & (cells["variant"] == "random")].iloc[0]
    assert random["mean"] == pytest.approx(np.mean(known["ablations"]["random"][1]))
    assert random["n_seeds"] == 3 and random["task_level_interval"]
    assert random["ci_low"] <= random["mean"] <= random["ci_high"]
