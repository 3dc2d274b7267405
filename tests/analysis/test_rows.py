"""A block's rows are its distinct configurations: one more line in a block file is one more row,
labelled apart from the others in Table 2 and in the figures' legends (issue #33's example)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.render import figures
from analysis.runs.blocks import (
    DEFAULT_CONFIG,
    baseline_method,
    canonical_config,
    clear_report_blocks,
    default_method,
    report_blocks,
)
from gaca.compose import blocks as block_files

DETECTOR_WITH_GIGPO = """\
block: detector
sweep:
  - seed: 0,1,2
    algorithm.detector: entropy,uniform,random
  - seed: 0,1,2
    algorithm: gigpo
"""


@pytest.fixture
def detector_with_gigpo(tmp_path, monkeypatch):
    """``sweeps/detector.yaml`` with a GiGPO line added, read by the report's blocks for one test."""
    path = tmp_path / "sweeps" / "detector.yaml"
    path.parent.mkdir()
    path.write_text(DETECTOR_WITH_GIGPO)
    load = block_files.load_block

    def load_block(name: str, folder: Path = block_files.SWEEPS_DIR) -> block_files.Block:
        return load(str(path) if name == "detector" else name, folder)

    monkeypatch.setattr(block_files, "load_block", load_block)
    clear_report_blocks()
    yield report_blocks().by_name["detector"]
    monkeypatch.undo()
    clear_report_blocks()


def test_the_reference_rows_are_found_through_the_specs_and_defaults():
    main = report_blocks().main
    assert main.default().key() == canonical_config(DEFAULT_CONFIG)
    assert (default_method(), baseline_method()) == ("gaca", "gigpo")
    assert main.estimator(baseline_method()).name == "gigpo"


def test_a_gigpo_line_in_the_detector_block_is_one_new_distinct_row(detector_with_gigpo):
    block = detector_with_gigpo
    assert len(block.variants) == 4
    assert len({v.name for v in block.variants}) == len({v.label for v in block.variants}) == 4
    assert block.at({"algorithm.detector": "entropy"}).label == "entropy (GACA)"
    assert block.estimator("gigpo").label == "GiGPO"


def test_the_gigpo_row_reads_apart_in_table2_and_the_legends(detector_with_gigpo, run_report, monkeypatch):
    legends: dict[str, list[str]] = {}

    def save(figure, folder, stem):
        legends[stem] = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
        return [folder / stem]

    monkeypatch.setattr(figures, "save", save)
    report = run_report("detector", "--no-pdf")
    assert report.status == 0
    table = (report.out / "tables" / "table2_ablations.tex").read_text()
    rows = [line.split("&")[0].strip() for line in table.splitlines() if "&" in line]
    assert rows.count("entropy (GACA)") == 1
    assert rows.count("GiGPO") == 1
    legend = legends["learning_curves_detector"]
    assert sorted(legend) == sorted(v.label for v in detector_with_gigpo.variants)
    assert len(set(legend)) == 4
