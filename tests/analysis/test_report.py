"""The ``gaca report`` command: options, errors, the selection protocol and the PDF."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from analysis.render import latex
from analysis.report import main
from analysis.runs.blocks import get_block


def test_selection_best_takes_each_runs_best_evaluation(run_report, known):
    best = run_report("debias", "--selection", "best", "--no-pdf")
    assert best.status == 0
    cells = pd.read_csv(best.out / "tables" / "cells.csv").set_index("variant")
    loo = known["ablations"]["loo"][1]
    assert cells.loc["loo", "mean"] == pytest.approx(np.mean(loo) + known["best_gain"])  # its peak at iteration 5
    assert cells.loc["entropy", "mean"] == pytest.approx(
        np.mean(known["main"][("gaca", "household")])
    )  # peaks at the end
    assert "best evaluation so far" in (best.out / "tables" / "table2_ablations.tex").read_text()
    assert not (best.out / "tables" / "table1_main.tex").exists()  # main not requested


def test_a_report_with_no_usable_run_says_so(run_report, capsys):
    empty = run_report("detector", "--scale", "small", "--no-pdf")
    assert empty.status == 1
    rows = ", ".join(sorted(f"detector/{variant.name}" for variant in get_block("detector").variants))
    assert re.search(rf"Not run at \w+/small: {re.escape(rows)}\.", empty.stdout), empty.stdout
    assert "no run fills any requested cell" in capsys.readouterr().err


def test_unknown_block_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["nope"])
    assert exit.value.code == 2
    assert "known: main, detector" in capsys.readouterr().err


def test_unknown_experiment_names_the_known_ones(store, tmp_path, capsys):
    assert main(["--tracking-uri", store.uri, "--experiment", "nope", "--out", str(tmp_path)]) == 2
    assert "known: " in capsys.readouterr().err


def test_without_latex_the_report_is_written_and_says_how_to_get_the_pdf(run_report, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    made = run_report("alpha_c")
    assert made.status == 0
    assert (made.out / "report.tex").exists() and not (made.out / "report.pdf").exists()
    assert (
        "report.pdf: not built: latexmk/pdflatex not found; install them with scripts/install-latex.sh" in made.stdout
    )


@pytest.mark.latex
def test_report_tex_compiles_to_a_pdf(run_report):
    made = run_report()
    assert made.status == 0, made.stdout
    pdf = made.out / "report.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert "report.pdf: built with latexmk" in made.stdout
    assert not list(made.out.glob("*.aux"))  # latexmk -c cleaned up
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert int(info.split("Pages:")[1].split()[0]) >= 3


@pytest.mark.latex
def test_a_latex_error_is_reported_with_the_log(tmp_path):
    tex = tmp_path / "broken.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\undefinedcommand\\end{document}\n")
    with pytest.raises(RuntimeError, match="Undefined control sequence"):
        latex.compile_pdf(tex)


def test_a_new_report_leaves_nothing_from_an_earlier_one(store, tmp_path):
    arguments = ["--tracking-uri", store.uri, "--out", str(tmp_path), "--no-pdf"]
    assert main(["main", *arguments]) == 0
    assert (tmp_path / "tables" / "table1_main.tex").exists()
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["alpha_c", *arguments]) == 0
    assert not (tmp_path / "tables" / "table1_main.tex").exists()
    assert not (tmp_path / "figures" / "fig2ab_learning_curves.png").exists()
    assert r"\input{tables/table1_main.tex}" not in (tmp_path / "report.tex").read_text()
    assert (tmp_path / "notes.txt").read_text() == "mine"  # only the report's own files are replaced


def test_a_single_block_report_is_complete_on_its_own(run_report):
    made = run_report("detector", "--no-pdf")
    assert made.status == 0
    tex = (made.out / "report.tex").read_text()
    for table in ("table2_ablations", "table7_diagnostics", "claims"):
        assert rf"\input{{tables/{table}.tex}}" in tex, table
    for stem in ("learning_curves_detector", "seeds_detector", "criticality_detector", "fig3_gate_law"):
        assert rf"\includegraphics{{figures/{stem}.pdf}}" in tex, stem
    assert r"\section*{Left out}" in tex and "Every table and figure of the requested blocks is shown." in tex
    claims = (made.out / "claims.md").read_text()
    assert "The mean lambda equals lambda0" in claims  # the gate is checked on GACA's row of the block


def test_the_pdf_lists_what_it_left_out_and_why(run_report):
    made = run_report("main", "--env", "shop", "--no-pdf")  # shop GACA logged no criticality histogram
    assert made.status == 0
    left_out = (made.out / "report.tex").read_text().split(r"\section*{Left out}")[1].split(r"\section*")[0]
    assert r"\item main: criticality: skipped, no GACA run of the main block has diag/criticality\_hist.csv" in left_out
    assert "main: criticality: skipped" in made.stdout
    assert not (made.out / "figures" / "criticality_main.pdf").exists()


def test_the_ablations_are_read_where_their_runs_are(tmp_path):
    from mlflow.tracking import MlflowClient

    from analysis.benches.synthetic import SyntheticRun, log_runs
    from analysis.runs.blocks import get_block

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    detector = get_block("detector")
    runs = [
        SyntheticRun(
            "gaca",
            "errand",
            seed=seed,
            overrides=dict(variant.overrides),
            final_success=0.5,
            block="detector",
            train_metrics=False,
        )
        for variant in detector.variants
        for seed in (0, 1)
    ]
    runs.append(SyntheticRun("gaca", "household", overrides={"algorithm.detector": "random"}, train_metrics=False))
    log_runs(MlflowClient(uri), "gaca", runs, artifact_location=str(tmp_path / "artifacts"))
    out = tmp_path / "reports"
    assert main(["detector", "--tracking-uri", uri, "--out", str(out), "--no-pdf"]) == 0
    cells = pd.read_csv(out / "tables" / "cells.csv")
    rows = len(detector.variants)  # random, uniform, entropy today: counted, so that a row added keeps this true
    assert set(cells["env"]) == {"errand"} and cells["n_seeds"].tolist() == [2] * rows
    assert main(["detector", "--env", "household", "--tracking-uri", uri, "--out", str(out), "--no-pdf"]) == 0
    assert pd.read_csv(out / "tables" / "cells.csv")["n_seeds"].tolist() == [1] + [0] * (rows - 1)


def test_where_pins_the_setting_a_report_reads(tmp_path, capsys):
    """Two trainer settings of the detector block in one store: the most common one by default,
    the other with --where; a key no run logs and a malformed item are one-line errors."""
    from mlflow.tracking import MlflowClient

    from analysis.benches.synthetic import SyntheticRun, log_runs
    from analysis.runs.blocks import get_block

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    settings = {0.01: (0.5, (0, 1, 2)), 0.1: (0.8, (0, 1))}  # kl_coef: (final success, seeds)
    runs = [
        SyntheticRun(
            "gaca",
            "errand",
            seed=seed,
            overrides={**dict(variant.overrides), "trainer.kl_coef": kl},
            final_success=success,
            block="detector",
            train_metrics=False,
        )
        for kl, (success, seeds) in settings.items()
        for variant in get_block("detector").variants
        for seed in seeds
    ]
    log_runs(MlflowClient(uri), "gaca", runs, artifact_location=str(tmp_path / "artifacts"))
    out = tmp_path / "reports"

    def cells(*args: str) -> pd.DataFrame:
        assert main(["detector", "--tracking-uri", uri, "--out", str(out), "--no-pdf", *args]) == 0
        return pd.read_csv(out / "tables" / "cells.csv")

    default = cells()
    rows = len(get_block("detector").variants)
    assert default["n_seeds"].tolist() == [3] * rows and default["mean"].tolist() == pytest.approx([0.5] * rows)
    capsys.readouterr()
    pinned = cells("--where", "trainer.kl_coef=0.10")
    assert pinned["n_seeds"].tolist() == [2] * rows and pinned["mean"].tolist() == pytest.approx([0.8] * rows)
    shown = capsys.readouterr().out
    excluded = 3 * rows  # the three kl_coef=0.01 seeds of each row
    assert (
        "only runs with trainer.kl_coef=0.1." in shown
        and f"trainer.kl_coef=0.01 (not 0.1) (--where) x{excluded}" in shown
    )

    assert main(["detector", "--tracking-uri", uri, "--out", str(tmp_path / "x"), "--where", "trainer.kl=0.1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "gaca report: --where trainer.kl: no run of experiment 'gaca' logs this param"
    )
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit) as exit:
        main(["detector", "--tracking-uri", uri, "--where", "trainer.kl_coef"])
    assert exit.value.code == 2 and "expected KEY=VALUE" in capsys.readouterr().err


def test_the_report_names_its_store_by_path_and_never_by_password(tmp_path, monkeypatch):
    from analysis.report import _describe_uri

    monkeypatch.chdir(tmp_path)
    assert _describe_uri("sqlite:///mlflow.db") == "sqlite store mlflow.db"
    assert _describe_uri(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}") == "sqlite store runs/mlflow.db"
    elsewhere = tmp_path.parent / "other.db"
    assert _describe_uri(f"sqlite:///{elsewhere}") == f"sqlite store {elsewhere.resolve()}"
    assert _describe_uri("http://alice:s3cret@tracking:5000") == "http://tracking:5000"
    assert "pw" not in _describe_uri("postgresql+psycopg://gaca:pw@127.0.0.1:5433/gaca")
