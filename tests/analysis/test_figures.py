"""The figures are produced, non-empty, and Figure 3 comes from the estimator's own gate."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
import torch

from analysis.render import figures
from analysis.runs.blocks import report_blocks
from analysis.runs.cells import CellKey, CellResult, Plan

STEMS = (
    "fig2ab_learning_curves",
    "fig2c_lambda0_sweep",
    "fig3_gate_law",
    "sample_efficiency",
    *(f"{figure}_{block}" for figure in ("seeds", "criticality") for block in report_blocks().by_name),
    *(f"learning_curves_{block}" for block in report_blocks().by_name if block != "main"),
)


@pytest.mark.parametrize("stem", STEMS)
def test_each_figure_is_a_non_empty_pdf_and_png(report, stem):
    pdf = report.out / "figures" / f"{stem}.pdf"
    png = report.out / "figures" / f"{stem}.png"
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(png)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05  # something is drawn, not a blank canvas


def test_figure3_draws_the_estimators_gate(tmp_path, monkeypatch):
    import gaca.estimators.gate as gate

    calls = []
    original = gate.gate_weight

    def recording(criticality: torch.Tensor, lambda0, alpha_lambda, beta_lambda):
        calls.append((lambda0, alpha_lambda, beta_lambda))
        return original(criticality, lambda0, alpha_lambda, beta_lambda)

    monkeypatch.setattr(gate, "gate_weight", recording)
    assert figures.gate_law(tmp_path)
    assert calls == [(0.5, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, 1.0, 1.0)]


def test_a_figure_without_data_is_skipped_and_reported(tmp_path, report):
    plan = Plan(tuple(report_blocks().by_name.values()))
    empty = pd.DataFrame(columns=["run_id", "bin_left", "bin_right", "count"])
    assert figures.criticality_distribution(plan, report_blocks().main, {}, empty, tmp_path, "criticality_main") == []
    assert figures.sample_efficiency(pd.DataFrame(), tmp_path) == []
    assert not list(tmp_path.iterdir())


def drawn(monkeypatch) -> list:
    """Collects the figures ``figures.save`` is given instead of writing them."""
    saved = []
    monkeypatch.setattr(figures, "save", lambda figure, folder, stem: saved.append(figure) or [folder / stem])
    return saved


def test_the_overflow_bin_is_drawn_as_a_marked_last_bin(tmp_path, monkeypatch):
    key = CellKey(report_blocks().main.variant("gaca").key(), "household", "tiny")
    cell = CellResult(key, ("r0",), (0,), np.array([0.5]), None)
    histogram = pd.DataFrame(
        {"run_id": "r0", "bin_left": [0.0, 2.0, 4.0], "bin_right": [2.0, 4.0, np.inf], "count": [6, 2, 2]}
    )
    plan = Plan((report_blocks().main,), env="household", scale="tiny")
    cells = {k: cell if k == key else CellResult(k, (), (), np.zeros(0), None) for k in plan.wanted()}
    saved = drawn(monkeypatch)
    assert figures.criticality_distribution(plan, report_blocks().main, cells, histogram, tmp_path, "criticality_main")
    axis = saved[0].axes[0]
    assert [text.get_text() for text in axis.texts] == ["≥ 4"]
    assert axis.get_xlim()[1] == pytest.approx(6.1)  # the last bin is drawn as wide as the one before it
    # densities: count / (total x width) = 6 / 20, 2 / 20, 2 / 20 per unit of c
    heights = sorted(round(float(value), 4) for patch in axis.patches for value in patch.get_data().values)
    assert heights == [0.1, 0.1, 0.3]


def test_learning_curves_have_a_95_percent_band_per_row(report, monkeypatch, tmp_path):
    from analysis.runs.cells import mean_curve

    curves = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"] * 2,
            "metric": "eval/success_rate",
            "step": [0] * 3 + [5] * 3,
            "value": [0.1, 0.2, 0.3, 0.5, 0.5, 0.5],
        }
    )
    cell = CellResult(CellKey((), "household", "tiny"), ("a", "b", "c"), (0, 1, 2), np.array([0.5] * 3), None)
    curve = mean_curve(cell, curves)
    half = 4.302652729911275 * 0.1 / np.sqrt(3)  # t(0.975, 2) x std / sqrt(n) = 0.248
    # 0.2 - 0.248 is below what a success rate can be: the band stops at 0.
    assert curve["low"].tolist() == pytest.approx([0.0, 0.5])
    assert curve["high"].tolist() == pytest.approx([0.2 + half, 0.5])
    unbounded = mean_curve(cell, curves, bounds=None)
    assert unbounded["low"].tolist() == pytest.approx([0.2 - half, 0.5])
