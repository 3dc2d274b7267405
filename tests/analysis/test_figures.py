"""The figures are produced, non-empty, and Figure 3 comes from the estimator's own gate."""

from __future__ import annotations

import matplotlib.image
import pandas as pd
import pytest
import torch

from analysis import figures
from analysis.blocks import BLOCKS
from analysis.cells import Plan

STEMS = (
    "fig2ab_learning_curves",
    "fig2c_lambda0_sweep",
    "fig3_gate_law",
    "criticality_distribution",
    "sample_efficiency",
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
    plan = Plan(tuple(BLOCKS.values()))
    empty = pd.DataFrame(columns=["run_id", "bin_left", "bin_right", "count"])
    assert figures.criticality_distribution(plan, {}, empty, tmp_path) == []
    assert figures.sample_efficiency(pd.DataFrame(), tmp_path) == []
    assert not list(tmp_path.iterdir())
