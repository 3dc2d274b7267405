"""Which runs are used: every excluded run is reported with its reason, none silently."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def ledger(report) -> pd.DataFrame:
    return pd.read_csv(report.out / "runs.csv").set_index("run_id")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("older_duplicate", "duplicate: same gaca.run_key as newer run"),
        ("older_equivalent", "duplicate: same gaca.run_key as newer run"),  # one run key for both spellings
        ("running", "unfinished: status RUNNING"),
        ("failed", "unfinished: status FAILED"),
        ("missing_final", "missing metric: final/eval_success_rate"),
        ("other_protocol", "other configuration: "),
        ("other_trainer", "other configuration: trainer.group_size=2 (not 8), trainer.lr=0.5 (not 0.001)"),
        ("search", "not in the requested tables"),
        ("foreign", "not a gaca training run"),
    ],
)
def test_each_troublesome_run_is_excluded_with_its_reason(ledger, store, name, reason):
    row = ledger.loc[store.run_ids[name]]
    assert not row["used"]
    assert row["reason"].startswith(reason)


def test_a_run_with_another_trainer_never_fills_the_default_cell(ledger, store):
    """Logged last in the detector block with the default estimator, it is not GACA's default cell:
    the default run of its seed is."""
    default = ledger.loc[
        ledger["used"] & (ledger["seed"] == 0) & ledger["cells"].str.contains("detector/entropy", na=False)
    ]
    assert len(default) == 1 and default.index[0] != store.run_ids["other_trainer"]
    assert "trainer.iterations=15 (not 10)" in ledger.loc[store.run_ids["other_protocol"], "reason"]


def test_runs_of_other_experiments_are_not_read(ledger, store):
    assert store.run_ids["other_experiment"] not in ledger.index


def test_every_other_run_is_used_in_a_cell(ledger, store, known):
    used = ledger.loc[ledger["used"]]
    main = sum(len(values) for values in known["main"].values())
    ablations = sum(len(values) for _, values in known["ablations"].values())
    assert len(used) == main + ablations
    assert used["cells"].str.len().gt(0).all()
    assert "detector/uniform lambda0/lambda0=0.5 modulation/modulation=0" in set(used["cells"])


def test_the_summary_reports_exclusions_partial_and_missing_cells(report):
    out = report.stdout
    assert "Excluded, unfinished: 2 (status FAILED x1; status RUNNING x1)." in out
    assert "Excluded, duplicate: 2." in out
    assert "Excluded, missing metric: 1 (final/eval_success_rate x1)." in out
    assert (
        "Partial: detector/uniform, lambda0/lambda0=0.5, modulation/modulation=0 at household/tiny has 2 of 3 seeds"
        in out
    )
    assert "Partial: main/gigpo at shop/tiny has 2 of 3 seeds" in out
    assert re.search(r"Not run at household/tiny: ([^.\n]*, )?lambda0/lambda0=0\.75[,.]", out), out


def test_final_outcomes_are_read_only_at_the_planned_last_iteration():
    from analysis.runs import cells

    ledger = pd.DataFrame(
        {
            "run_id": ["complete", "no-last-evaluation"],
            "final": [0.5, 0.5],
            "params.trainer.iterations": [10, 10],
            "reason": [None, None],
            "cell": ["c1", "c2"],
            "seed": [0, 0],
        }
    )
    curves = pd.DataFrame(
        {
            "run_id": ["complete", "complete", "no-last-evaluation"],
            "metric": "eval/success_rate",
            "step": [5, 10, 5],
            "value": [0.4, 0.5, 0.4],
        }
    )
    selected = cells.select(ledger, curves, "final").set_index("run_id")
    assert selected.loc["complete", "iteration"] == 10
    assert pd.isna(selected.loc["no-last-evaluation", "iteration"])  # its interval falls back to seeds
    best = cells.select(ledger, curves, "best").set_index("run_id")
    assert best.loc["complete", "score"] == 0.5 and best.loc["no-last-evaluation", "iteration"] == 5


def test_a_cells_own_interval_stays_inside_zero_and_one() -> None:
    """Three seeds that learn or collapse: the t interval of the mean would pass 100%; a success rate cannot."""
    from analysis.runs.cells import CellKey, CellResult

    cell = CellResult(
        CellKey((("name", "a"),), "errand", "tiny"), ("r0", "r1", "r2"), (0, 1, 2), np.array([0.97, 0.66, 0.49]), None
    )
    low, high = cell.interval()
    assert high == 1.0 and 0.0 < low < cell.mean
    half = cell.mean - low
    assert half == pytest.approx(float(np.std([0.97, 0.66, 0.49], ddof=1)) / np.sqrt(3) * 4.302652729911275, rel=1e-6)
    floor = CellResult(
        CellKey((("name", "b"),), "errand", "tiny"), ("r0", "r1", "r2"), (0, 1, 2), np.array([0.05, 0.0, 0.5]), None
    )
    assert floor.interval()[0] == 0.0
