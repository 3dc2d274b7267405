"""The per-seed stability table (start, final, invalid rate, collapsed) from a store of runs with known curves."""

import math

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from analysis.benches.synthetic import SyntheticRun, log_runs
from analysis.studies import stability
from gaca import contract

# kl_coef -> seed -> (start, final) evaluation success on 16 tasks
KNOWN = {
    0.01: {0: (0.375, 0.875), 1: (0.375, 0.25), 2: (0.3125, 0.0), 3: (0.375, 0.3125)},
    0.1: {0: (0.375, 0.8125), 1: (0.375, 0.75), 2: (0.3125, 0.6875), 3: (0.375, 0.625)},
}
# seed 1 at 0.01 ends 12.5 points below its start (collapsed), seed 3 6.25 below (not), seed 2 31.25 below


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    uri = f"sqlite:///{tmp_path_factory.mktemp('stability') / 'mlflow.db'}"
    runs = [
        SyntheticRun(
            seed=seed,
            final_success=final,
            eval_curve=[start, (start + final) / 2, final],
            overrides={"trainer.kl_coef": kl},
            preset="default",
            block="detector",
            histogram=False,
        )
        for kl, seeds in KNOWN.items()
        for seed, (start, final) in seeds.items()
    ]
    # not read: an unfinished run, another block's run
    runs.append(SyntheticRun(seed=4, final_success=0.0, status="RUNNING", block="detector", preset="default"))
    runs.append(SyntheticRun(seed=5, final_success=0.0, block="lambda0", preset="default", histogram=False))
    ids = log_runs(MlflowClient(uri), "gaca", runs)
    for run_id in ids[:8]:  # a property logged from iteration 1, as training logs it
        for step, value in enumerate([0.6, 0.5, 0.4, 0.3], start=1):
            MlflowClient(uri).log_metric(run_id, contract.DIAG_STEP_EPISODE_CORR, value, step=step)
    return uri


def summaries(uri, **kwargs):
    client = MlflowClient(uri)
    runs = stability.select_runs(stability.load_runs(client, "gaca"), "detector", kwargs.pop("where", {}))
    curves = stability.load_curves(client, list(runs["run_id"]), stability.HISTORIES)
    return {s.setting: s for s in stability.summarise(runs, curves, **kwargs)}


def test_settings_are_told_apart_by_the_params_that_differ(store):
    found = summaries(store)
    assert set(found) == {"trainer.kl_coef=0.01", "trainer.kl_coef=0.1"}
    low, high = found["trainer.kl_coef=0.01"], found["trainer.kl_coef=0.1"]
    assert [r.seed for r in low.rows] == [0, 1, 2, 3]
    assert [r.collapsed for r in low.rows] == [False, True, True, False]
    assert (low.collapsed, high.collapsed) == (2, 0)
    finals = np.array([0.875, 0.25, 0.0, 0.3125])
    assert low.mean == pytest.approx(finals.mean())
    assert low.seed_std == pytest.approx(finals.std(ddof=1))
    assert not low.meets_targets
    # 0.1: std of 0.8125, 0.75, 0.6875, 0.625 is 8.07 points, nothing collapsed
    assert high.seed_std == pytest.approx(0.0807, abs=1e-4)
    assert high.meets_targets
    pooled = math.sqrt((3 * low.seed_std**2 + 3 * high.seed_std**2) / 6)
    assert stability.pooled_seed_std(found.values()) == pytest.approx(pooled)


def test_invalid_rate_is_the_mean_of_the_last_iterations(store):
    # the synthetic runs log train/invalid_action_rate = 1 / (1 + step) for steps 0-9
    row = summaries(store)["trainer.kl_coef=0.1"].rows[0]
    assert row.invalid_tail == pytest.approx(np.mean([1 / 8, 1 / 9, 1 / 10]))
    assert row.invalid_peak == pytest.approx(1.0)


def test_where_and_by_select_and_label(store):
    found = summaries(store, where={"trainer.kl_coef": 0.1}, by=["trainer.kl_coef", "trainer.lr"])
    assert list(found) == ["trainer.kl_coef=0.1, trainer.lr=0.001"]


def test_clopper_pearson_matches_the_exact_binomial_interval():
    low, high = stability.clopper_pearson(1, 10)
    assert (low, high) == (pytest.approx(0.002529, abs=1e-6), pytest.approx(0.445016, abs=1e-6))
    assert stability.clopper_pearson(0, 10) == (0.0, pytest.approx(0.308497, abs=1e-6))
    assert stability.clopper_pearson(0, 0) == (0.0, 1.0)


def test_cli_prints_the_tables_and_refuses_bad_input(store, capsys):
    assert stability.main(["--tracking-uri", store, "--block", "detector"]) == 0
    out = capsys.readouterr().out
    assert "| 1 | 37.5 | 25.0 |" in out
    assert "| trainer.kl_coef=0.01 | 4 | 2 [7, 93]% | 35.9 |" in out
    assert stability.main(["--tracking-uri", store, "--where", "trainer.kl_coef"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --where 'trainer.kl_coef': expected KEY=VALUE, e.g. trainer.kl_coef=0.1"]
    assert stability.main(["--tracking-uri", store, "--block", "nothing"]) == 2
    assert capsys.readouterr().err.strip() == "error: no finished run matches --block/--where"


def test_properties_are_the_setting_means_at_iteration_1_and_over_the_last_iterations(store):
    found = summaries(store)
    client = MlflowClient(store)
    ids = [row.run_id for s in found.values() for row in s.rows]
    curves = stability.load_curves(client, ids, [key for _, key in stability.PROPERTIES])
    table = stability.properties(list(found.values()), curves).splitlines()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table[2:] if "|" in line}
    assert rows["corr(A^S, A^E)"] == ["0.600", "0.400", "0.600", "0.400"]
    # synthetic train metrics are 1 / (1 + step) from step 0 (no iteration-1 start): the last three 0.1119
    trained = f"{np.mean([1 / 8, 1 / 9, 1 / 10]):.3f}"
    assert rows["success rate"] == ["-", trained, "-", trained]
    # the prior is not logged by synthetic runs
    assert rows["prior: right at the pivots"] == ["-", "-", "-", "-"]
