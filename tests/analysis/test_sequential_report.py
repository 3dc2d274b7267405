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


@pytest.fixture(scope="module")
def sequential_store(tmp_path_factory) -> tuple[Store, Schedule]:
    folder = tmp_path_factory.mktemp("sequential")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = MlflowClient(uri)
    schedule = Schedule((3, 6, 9))
    runs = [
        SyntheticRun(
            "gaca",
            seed=seed,
            overrides={"algorithm.detector": detector},
            final_success=value,
            block="detector",
            tasks=TASKS,
        )
        for detector, values in SUCCESS.items()
        for seed, value in enumerate(values)
    ]
    for run_id in log_runs(client, "gaca", runs, artifact_location=str(folder / "artifacts")):
        client.set_tag(run_id, f"{TAG_SEQUENTIAL}.detector", schedule.tag())
    return Store(uri, folder, {}), schedule


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


@pytest.mark.slow
def test_runs_without_the_design_keep_the_fixed_n_intervals(sequential_store, tmp_path: Path):
    store, _ = sequential_store
    client = MlflowClient(store.uri)
    run_ids = [run.info.run_id for run in client.search_runs([client.get_experiment_by_name("gaca").experiment_id])]
    client.delete_tag(run_ids[0], f"{TAG_SEQUENTIAL}.detector")
    try:
        report = make_report(store, tmp_path, "detector", "--no-pdf")
        text = (tmp_path / "claims.md").read_text()
        assert "its claims use the fixed-n intervals" in text
        assert "Sequential design of detector" not in text
    finally:
        client.set_tag(run_ids[0], f"{TAG_SEQUENTIAL}.detector", Schedule((3, 6, 9)).tag())
    assert report.status == 0
