"""The one-way sensitivity test on hand-computable settings x seeds tables."""

import math

import pandas as pd
import pytest
from scipy import stats

from analysis.studies.sensitivity import main, render, restrict_seeds, select, sensitivity, with_auc


def test_two_settings_by_hand():
    table = pd.DataFrame([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], index=[0.0, 1.0], columns=[0, 1, 2])
    result = sensitivity(table)
    # Means 2 and 5: between-settings SS 13.5 on 1 dof; within SS 2 + 2 = 4 on 4 dof -> F = 13.5.
    assert result.anova[0] == pytest.approx(13.5)
    assert result.anova[1] == pytest.approx(stats.f.sf(13.5, 1, 4))
    assert result.spread == 3.0 and result.pooled_seed_std == pytest.approx(1.0)
    assert result.friedman is None  # Friedman needs three settings


def test_friedman_uses_seeds_as_blocks_and_missing_seeds_are_left_out():
    table = pd.DataFrame(
        [[10.0, 20.0, 30.0, math.nan], [11.0, 22.0, 33.0, 40.0], [12.0, 24.0, 36.0, 41.0]],
        index=[0.0, 0.5, 1.0],
        columns=[0, 1, 2, 3],
    )
    result = sensitivity(table)
    # Within every complete seed the order is 0 < 0.5 < 1: ranks 1, 2, 3 in all 3 blocks -> chi2 = 6.
    assert result.friedman[0] == pytest.approx(6.0)
    # Seed effects dominate: the unpaired ANOVA sees almost nothing.
    assert result.anova[1] > 0.5
    assert "Friedman (seeds as blocks): chi2 = 6.00" in render(result, "algorithm.lambda0")


def test_too_few_seeds_is_refused():
    with pytest.raises(ValueError, match="at least two seeds"):
        sensitivity(pd.DataFrame([[1.0], [2.0]], index=[0, 1], columns=[0]))


def test_select_keeps_the_newest_finished_run_per_setting_and_seed():
    runs = pd.DataFrame(
        {
            "status": ["FINISHED", "FINISHED", "FAILED", "FINISHED", "FINISHED"],
            "block": ["lambda0"] * 4 + ["detector"],
            "seed": [0, 0, 1, 1, 0],
            "final": [0.5, 0.1, 0.9, 0.4, 0.7],
            "params.algorithm.lambda0": [0.25, 0.25, 0.25, 0.25, 0.25],
            "params.algorithm.alpha_lambda": [0.0, 0.0, 0.0, 0.0, 0.0],
            "params.algorithm.beta_lambda": [0.0, 0.0, 0.0, 0.0, 0.0],
        }
    )
    table = select(runs, "lambda0", "algorithm.lambda0", {"algorithm.alpha_lambda": 0.0})
    assert table.loc[0.25].tolist() == [50.0, 40.0]


def test_the_auc_measure_is_each_runs_mean_evaluation_success():
    runs = pd.DataFrame(
        {
            "run_id": ["a", "b"],
            "status": ["FINISHED", "FINISHED"],
            "block": ["lambda0", "lambda0"],
            "seed": [0, 1],
            "final": [0.9, 0.8],
            "params.algorithm.lambda0": [0.5, 0.5],
        }
    )
    curves = pd.DataFrame(
        {
            "run_id": ["a", "a", "a", "b", "b", "b"],
            "metric": ["eval/success_rate"] * 2 + ["train/success_rate"] + ["eval/success_rate"] * 3,
            "step": [0, 5, 5, 0, 5, 10],
            "value": [0.2, 0.6, 0.99, 0.1, 0.2, 0.6],
        }
    )
    table = select(with_auc(runs, curves), "lambda0", "algorithm.lambda0", {}, "auc")
    assert table.loc[0.5].tolist() == pytest.approx([40.0, 30.0])
    assert "AUC" in render(
        sensitivity(pd.DataFrame([[1.0, 2.0], [3.0, 5.0]], index=[0, 1], columns=[0, 1])), "k", "auc"
    )


def test_seeds_restrict_the_tests_to_a_design():
    # Seed 3 ran for one setting only (an interrupted extension): with --seeds 0,1,2 it stays out.
    table = pd.DataFrame([[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 6.0, math.nan]], index=[0.0, 1.0], columns=[0, 1, 2, 3])
    restricted = restrict_seeds(table, [0, 1, 2])
    assert list(restricted.columns) == [0, 1, 2]
    assert sensitivity(restricted).anova[0] == pytest.approx(13.5)  # the hand-computed table above
    assert sensitivity(table).anova[0] != pytest.approx(13.5)


def test_bad_seeds_are_refused_before_any_store_is_read(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--seeds", "0,x", "--uri", f"sqlite:///{tmp_path / 'mlflow.db'}"])
    assert exit.value.code == 2
    assert "--seeds: must be comma-separated integers, e.g. 0,1,2, got '0,x'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
