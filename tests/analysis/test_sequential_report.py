"""`gaca report` on a block run sequentially: the runs carry the design as a tag, the claims take the
repeated intervals' verdicts, and the text states the looks, the alpha spent, the seeds per cell and
at which look each comparison was decided."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from analysis.sequential import Schedule
from analysis.synthetic import SyntheticRun, log_runs
from gaca.contract import TAG_SEQUENTIAL

from .conftest import Store, make_report

TASKS = 16
# Per detector, seeds 0-5: entropy far above uniform (decided at the second look, 6 seeds, as the
# first look at 3 seeds may not decide), uniform and random close (never decided).
SUCCESS = {
    "entropy": [0.9375, 1.0, 0.9375, 1.0, 0.9375, 1.0],
    "uniform": [0.5, 0.5625, 0.4375, 0.5, 0.5625, 0.4375],
    "random": [0.5, 0.4375, 0.5625, 0.5625, 0.4375, 0.5],
}


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
    schedule = Schedule((3, 6, 9))
    return detector_store(tmp_path_factory.mktemp("sequential"), SUCCESS, schedule), schedule


def test_the_report_states_the_design_and_takes_its_verdicts(sequential_store, tmp_path: Path):
    store, schedule = sequential_store
    report = make_report(store, tmp_path, "detector", "--no-pdf")
    assert report.status == 0, report.stdout
    text = (tmp_path / "claims.md").read_text()
    assert "Sequential design of detector: looks after 3, 6, 9 seeds, obf alpha spending" in text
    assert f"2 of 3 looks made, alpha spent {schedule.spent(2):.4f}" in text
    assert "Seeds per cell: random 6, uniform 6, entropy 6." in text
    assert "entropy − uniform: +46.88 pts" in text and "→ holds, decided at look 2" in text
    assert "uniform − random: +0.00 pts" in text and "→ continue, undecided after look 2" in text
    # One comparison undecided: the claim is inconclusive under the design, whatever the fixed-n one says.
    assert "| Detector: random < uniform < entropy (Section 4.3) | **inconclusive** |" in text
    assert "Sequential design of detector" in report.stdout
    from analysis.claims import SEQUENTIAL_VERDICTS

    assert SEQUENTIAL_VERDICTS in (tmp_path / "tables" / "claims.tex").read_text()


@pytest.mark.slow
def test_runs_without_the_tag_are_read_and_two_designs_keep_the_fixed_n_intervals(sequential_store, tmp_path: Path):
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
        assert "Sequential design of detector" in text and "→ holds, decided at look 2" in text
        client.set_tag(run_ids[0], tag, Schedule((3, 5, 7)).tag())
        report = make_report(store, tmp_path / "two", "detector", "--no-pdf")
        text = (tmp_path / "two" / "claims.md").read_text()
        assert "detector: its runs carry 2 sequential designs; its claims use the fixed-n intervals" in text
        assert "Sequential design of detector" not in text
    finally:
        client.set_tag(run_ids[0], tag, schedule.tag())
    assert report.status == 0


@pytest.mark.slow
def test_a_cell_the_rounds_stopped_running_keeps_its_decision(tmp_path: Path):
    """entropy stopped at 6 seeds (its only comparison decided at look 2); uniform and random went on
    to 9: the undecided comparison is tested at look 3, the decided one stays at look 2, and the
    claim is not "missing" for the cells' unequal seeds."""
    more = {"uniform": [0.5, 0.5625, 0.4375], "random": [0.5, 0.4375, 0.5625]}
    schedule = Schedule((3, 6, 9))
    store = detector_store(tmp_path, {name: SUCCESS[name] + more.get(name, []) for name in SUCCESS}, schedule)
    report = make_report(store, tmp_path / "out", "detector", "--no-pdf")
    assert report.status == 0, report.stdout
    text = (tmp_path / "out" / "claims.md").read_text()
    assert "Seeds per cell: random 9, uniform 9, entropy 6." in text
    assert f"3 of 3 looks made, alpha spent {schedule.spent(3):.4f}" in text
    assert "entropy − uniform: +46.88 pts" in text and "→ holds, decided at look 2" in text
    assert "uniform − random: +0.00 pts" in text and "(n=9; greater) → continue, undecided after look 3" in text
    assert "has 6 of 9 seeds" not in text


def test_table_2_gives_a_sequential_block_its_repeated_intervals(sequential_store, tmp_path: Path):
    import re

    from analysis import sequential_claims, stats, tables
    from analysis.cells import PAIRED_SEEDS, Comparison

    store, _ = sequential_store
    report = make_report(store, tmp_path, "detector", "--no-pdf")
    assert report.status == 0, report.stdout
    tex = (tmp_path / "tables" / "table2_ablations.tex").read_text()
    assert tables.SEQUENTIAL_NOTE in tex
    uniform = next(line for line in tex.splitlines() if line.startswith("uniform"))
    low, high = (float(x) for x in re.search(r"\[([-+0-9.]+), ([-+0-9.]+)\]\^\{s\}", uniform).groups())
    # The table's interval is the claims' repeated one (uniform − entropy, the sign turned), wider
    # than the fixed-n 95% interval claims.md prints for the same difference.
    claims = (tmp_path / "claims.md").read_text()
    bounds = r"\[\+([0-9.]+), \+([0-9.]+)\]"
    repeated = re.search(r"entropy − uniform: \+46.88 pts, repeated 98.4% interval " + bounds, claims)
    fixed = re.search(r"entropy − uniform: \+46.88 pts \[\+([0-9.]+), \+([0-9.]+)\] \(paired", claims)
    assert (low, high) == (-float(repeated.group(2)), -float(repeated.group(1)))
    assert low < -float(fixed.group(2)) and high > -float(fixed.group(1))
    # Before the first deciding look (2 seeds of looks 3, 6, 9) there is no interval.
    two_seeds = Comparison(0.1, None, PAIRED_SEEDS, 2, 0.01, 0.07, 0.5, 0.5, levels=(stats.Level(0.01),))
    schedule = Schedule((3, 6, 9)).calibrated()
    assert sequential_claims.repeated_interval(schedule, two_seeds)[2] == 0.0
    assert tables.difference_interval(two_seeds, schedule) == f"{tables.NOT_RUN}$^{{s}}$"
