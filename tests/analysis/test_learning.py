"""The learning-evidence table (initial vs final success over seeds) from a store of runs with known curves."""

import pytest
from mlflow.tracking import MlflowClient

from analysis.benches.synthetic import SyntheticRun, log_runs
from analysis.studies import learning

# (method, seed) -> (initial, final) evaluation success on 16 tasks
KNOWN = {
    ("grpo", 0): (0.25, 0.5),
    ("grpo", 1): (0.125, 0.5625),
    ("grpo", 2): (0.1875, 0.4375),
    ("gaca", 0): (0.25, 0.75),
    ("gaca", 1): (0.125, 0.625),
}


@pytest.fixture
def store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runs = [
        SyntheticRun(
            method=method,
            seed=seed,
            final_success=final,
            eval_curve=[initial, (initial + final) / 2, final],
            preset="default",
            train_metrics=False,
            histogram=False,
        )
        for (method, seed), (initial, final) in KNOWN.items()
    ]
    # An unfinished run and a run of another preset must not count.
    runs.append(
        SyntheticRun(method="gaca", seed=2, final_success=0.0, status="RUNNING", preset="default", train_metrics=False)
    )
    runs.append(
        SyntheticRun(
            method="gaca",
            seed=2,
            final_success=0.0,
            eval_curve=[0.9, 0.5, 0.0],
            preset="quick",
            train_metrics=False,
            histogram=False,
        )
    )
    log_runs(MlflowClient(uri), "gaca", runs)
    return uri


def test_table_gives_mean_and_std_over_seeds_of_initial_final_and_gain(store, capsys):
    assert learning.main(["--tracking-uri", store, "--preset", "default"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| method | env | scale | seeds | initial")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in lines[2:]}
    assert set(rows) == {"gaca", "grpo"}
    # gaca: initial 25, 12.5 -> 18.75 ± 8.84; final 75, 62.5 -> 68.75 ± 8.84; gain 50, 50 -> +50.0 ± 0.0
    assert rows["gaca"] == ["household", "tiny", "2", "18.8 ± 8.8", "68.8 ± 8.8", "+50.0 ± 0.0"]
    # grpo: initial 25, 12.5, 18.75 -> 18.75 ± 6.25; final 50, 56.25, 43.75 -> 50 ± 6.25; gain 25, 43.75, 25
    assert rows["grpo"] == ["household", "tiny", "3", "18.8 ± 6.2", "50.0 ± 6.2", "+31.2 ± 10.8"]


def test_without_preset_filter_the_other_preset_counts(store, capsys):
    learning.main(["--tracking-uri", store])
    gaca = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| gaca")]
    assert [c.strip() for c in gaca[0].split("|")[4:5]] == ["3"]


def test_empty_selection_says_so(store):
    with pytest.raises(SystemExit, match="no finished run"):
        learning.main(["--tracking-uri", store, "--block", "nonexistent"])


def test_an_ablated_gaca_gets_its_own_row_instead_of_standing_in_for_gaca(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runs = [
        SyntheticRun(
            method="gaca",
            seed=0,
            final_success=0.75,
            eval_curve=[0.25, 0.5, 0.75],
            block="main",
            train_metrics=False,
            histogram=False,
        ),
        # the detector block's uniform control, logged later (the newest run of a cell used to win)
        SyntheticRun(
            method="gaca",
            seed=0,
            final_success=0.25,
            eval_curve=[0.25, 0.25, 0.25],
            block="detector",
            overrides={"algorithm.detector": "uniform"},
            train_metrics=False,
            histogram=False,
            start_time_ms=4_000_000_000_000,
        ),
    ]
    log_runs(MlflowClient(uri), "gaca", runs)
    learning.main(["--tracking-uri", uri])
    rows = {line.split("|")[1].strip(): line.split("|")[6].strip() for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows == {"gaca": "75.0", "gaca detector=uniform": "25.0"}
