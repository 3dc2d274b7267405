"""`gaca report` on a block run sequentially: the runs carry the design as a tag, the claims take the
verdicts of the looks, and the text states the looks, the test, the seeds per cell and at which look
each comparison was decided."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from analysis.benches.synthetic import SyntheticRun, log_runs
from analysis.stats.sequential import Schedule
from gaca.contract import TAG_SEQUENTIAL

from .conftest import Store, make_report

TASKS = 16
# Per detector, seeds 0-8: entropy 77 points above uniform, uniform and random close (never decided).
# The claim makes 2 comparisons, each at 2.5% (1.25% a side): O'Brien-Fleming spending over the looks
# (3, 6, 9, 12) lets the look at 9 seeds reject 2 of 512 sign patterns (0.39%), and the seeds that all
# favour entropy are one of them; the looks at 3 and 6 spend under one pattern.
SUCCESS = {
    "entropy": [0.9375, 1.0, 0.9375] * 3,
    "uniform": [0.1875, 0.25, 0.125] * 3,
    "random": [0.1875, 0.125, 0.25] * 3,
}
LOOKS = (3, 6, 9, 12)


def detector_store(folder: Path, values: dict[str, list[float]], schedule: Schedule) -> Store:
    """A store of detector runs with final success ``values`` per detector (seeds 0, 1, ...), each
    tagged with ``schedule`` as its rounds tag it."""
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = MlflowClient(uri)
    runs = [
        SyntheticRun(
            "gaca",
            seed=seed,
            overrides={"algorithm.detector": detector},
            final_success=value,
            block="detector",
            tasks=TASKS,
        )
        for detector, series in values.items()
        for seed, value in enumerate(series)
    ]
    for run_id in log_runs(client, "gaca", runs, artifact_location=str(folder / "artifacts")):
        client.set_tag(run_id, f"{TAG_SEQUENTIAL}.detector", schedule.tag())
    return Store(uri, folder, {})


@pytest.fixture(scope="module")
def sequential_store(tmp_path_factory) -> tuple[Store, Schedule]:
    schedule = Schedule(LOOKS)
    return detector_store(tmp_path_factory.mktemp("sequential"), SUCCESS, schedule), schedule


def test_the_report_states_the_design_and_takes_its_verdicts(sequential_store, tmp_path: Path):
    store, schedule = sequential_store
    report = make_report(store, tmp_path, "detector", "--no-pdf")
    assert report.status == 0, report.stdout
    text = (tmp_path / "claims.md").read_text()
    assert "Sequential design of detector: looks after 3, 6, 9, 12 seeds, group-sequential exact sign-flip" in text
    assert "3 of 4 looks made; 1 of 2 comparisons decided" in text
    assert re.search(r"Seeds per cell: random 9, uniform 9, entropy 9[,.]", text), text
    assert "entropy − uniform: +77.08 pts, 97.5% interval [" in text and "→ holds, decided at look 3" in text
    assert "uniform − random: +0.00 pts" in text and "→ continue, undecided after look 3" in text
    # One comparison undecided: the claim is inconclusive under the design, whatever the fixed-n one says.
    assert "| Detector: random < uniform < entropy (Section 4.3) | **inconclusive** |" in text
    assert "Sequential design of detector" in report.stdout
    from analysis.render.claims import SEQUENTIAL_VERDICTS

    assert SEQUENTIAL_VERDICTS in (tmp_path / "tables" / "claims.tex").read_text()


@pytest.mark.slow
def test_runs_without_the_tag_are_read_unless_older_than_the_design_and_two_designs_keep_fixed_n(
    sequential_store, tmp_path: Path
):
    store, schedule = sequential_store
    client = MlflowClient(store.uri)
    run_ids = [run.info.run_id for run in client.search_runs([client.get_experiment_by_name("gaca").experiment_id])]
    tag = f"{TAG_SEQUENTIAL}.detector"
    try:
        # A run another block's rounds (or a plain sweep) made: the same seed the rounds would run.
        client.delete_tag(run_ids[0], tag)
        report = make_report(store, tmp_path / "untagged", "detector", "--no-pdf")
        text = (tmp_path / "untagged" / "claims.md").read_text()
        assert report.status == 0
        assert "Sequential design of detector" in text and "→ holds, decided at look 3" in text
        # The oldest run untagged: it existed before the design, so it decides nothing and is listed.
        client.set_tag(run_ids[0], tag, schedule.tag())
        client.delete_tag(run_ids[-1], tag)
        report = make_report(store, tmp_path / "before", "detector", "--no-pdf")
        text = (tmp_path / "before" / "claims.md").read_text()
        assert "detector: 1 run(s) of its cells existed before its design and are not read into its decisions: " in text
        assert "Seeds per cell: random 9, uniform 9, entropy 8." in text
        client.set_tag(run_ids[-1], tag, schedule.tag())
        client.set_tag(run_ids[0], tag, Schedule((3, 5, 7)).tag())
        report = make_report(store, tmp_path / "two", "detector", "--no-pdf")
        text = (tmp_path / "two" / "claims.md").read_text()
        assert "detector: its runs carry 2 sequential designs; its claims use the fixed-n verdicts" in text
        assert "Sequential design of detector" not in text
    finally:
        client.set_tag(run_ids[0], tag, schedule.tag())
    assert report.status == 0


@pytest.mark.slow
def test_a_cell_the_rounds_stopped_running_keeps_its_decision(tmp_path: Path):
    """entropy stopped at 9 seeds (its only comparison decided at look 3); uniform and random went on
    to 12: the undecided comparison is tested at look 4, the decided one stays at look 3, and the
    claim is not "missing" for the cells' unequal seeds."""
    more = {"uniform": [0.1875, 0.25, 0.125], "random": [0.1875, 0.125, 0.25]}
    schedule = Schedule(LOOKS)
    store = detector_store(tmp_path, {name: SUCCESS[name] + more.get(name, []) for name in SUCCESS}, schedule)
    report = make_report(store, tmp_path / "out", "detector", "--no-pdf")
    assert report.status == 0, report.stdout
    text = (tmp_path / "out" / "claims.md").read_text()
    assert "Seeds per cell: random 12, uniform 12, entropy 9." in text
    assert "4 of 4 looks made" in text
    assert "entropy − uniform: +77.08 pts" in text and "→ holds, decided at look 3" in text
    assert "uniform − random: +0.00 pts" in text and "(n=12; greater) → continue, undecided after look 4" in text
    assert "has 9 of 12 seeds" not in text


def test_table_2_gives_a_sequential_block_the_interval_of_its_test(sequential_store, tmp_path: Path):
    import re

    import numpy as np

    from analysis.render import tables
    from analysis.stats import sequential

    store, schedule = sequential_store
    report = make_report(store, tmp_path, "detector", "--no-pdf")
    assert report.status == 0, report.stdout
    tex = (tmp_path / "tables" / "table2_ablations.tex").read_text()
    assert tables.SEQUENTIAL_NOTE in tex
    uniform = next(line for line in tex.splitlines() if line.startswith("uniform"))
    low, high = (float(x) for x in re.search(r"\[([-+0-9.]+), ([-+0-9.]+)\]\^\{s\}", uniform).groups())
    # uniform − entropy over the 9 paired seeds, at the design's 95%: its sign-flip test inverted at its looks.
    differences = np.array(SUCCESS["uniform"]) - np.array(SUCCESS["entropy"])
    expected = sequential.interval(differences, schedule.alpha, schedule)
    assert (low, high) == pytest.approx((100 * expected[0], 100 * expected[1]), abs=0.006)
    assert low < 100 * differences.mean() < high
