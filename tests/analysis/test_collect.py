"""MLflow -> frames, against the real SQLite store."""

from __future__ import annotations

import pandas as pd
import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from analysis.benches.synthetic import SyntheticRun, log_runs
from analysis.runs import collect


def test_runs_frame_reads_only_the_experiment_and_parses_params(store):
    runs = collect.load_runs(MlflowClient(store.uri), "gaca")
    assert store.run_ids["other_experiment"] not in set(runs["run_id"])
    assert store.run_ids["foreign"] in set(runs["run_id"])
    row = runs.set_index("run_id").loc[store.run_ids["search"]]
    assert row["params.algorithm.lambda0"] == 0.3
    assert row["seed"] == 0 and row["env"] == "household" and row["scale"] == "tiny"
    assert runs["start_time"].is_monotonic_decreasing  # newest first
    assert runs.set_index("run_id").loc[store.run_ids["running"], "status"] == "RUNNING"


def test_unknown_experiment_names_the_known_ones(store):
    with pytest.raises(LookupError, match="known: .*gaca"):
        collect.load_runs(MlflowClient(store.uri), "nope")


def test_bulk_curves_equal_the_per_run_histories(store):
    client = MlflowClient(store.uri)
    runs = collect.load_runs(client, "gaca")
    run_ids = list(runs["run_id"][:7])
    curves = collect.load_curves(client, run_ids, ["eval/success_rate", "diag/lambda_mean"])
    for run_id in run_ids:
        for metric in ("eval/success_rate", "diag/lambda_mean"):
            history = sorted((m.step, m.value) for m in client.get_metric_history(run_id, metric))
            mine = curves.loc[(curves["run_id"] == run_id) & (curves["metric"] == metric), ["step", "value"]]
            assert list(mine.itertuples(index=False, name=None)) == history


def test_a_step_logged_twice_keeps_the_last_value(store):
    client = MlflowClient(store.uri)
    (run_id,) = log_runs(
        client, "resumed", [SyntheticRun(final_success=0.5)], artifact_location=str(store.folder / "resumed")
    )
    client.log_batch(run_id, metrics=[Metric("eval/success_rate", 0.9, 10**13, 5)])  # a resumed run re-logs step 5
    curves = collect.load_curves(client, [run_id], ["eval/success_rate"])
    assert curves.loc[curves["step"] == 5, "value"].tolist() == [0.9]


def test_outcomes_at_the_selected_iteration_and_missing_files_left_out(store):
    runs = collect.load_runs(MlflowClient(store.uri), "gaca").set_index("run_id")
    run_id = store.run_ids["search"]
    selected = pd.DataFrame(
        {
            "run_id": [run_id, run_id + "x"],
            "artifact_uri": [runs.loc[run_id, "artifact_uri"]] * 2,
            "iteration": [10, 10],
        }
    )
    selected.loc[1, "artifact_uri"] += "/nothing-here"
    outcomes = collect.load_outcomes(store.uri, selected)
    assert set(outcomes["run_id"]) == {run_id}
    assert len(outcomes) == 16 and outcomes["success"].mean() == 0.5
    assert (outcomes["iteration"] == 10).all()


def test_the_per_run_fallback_reads_the_same_histories(store):
    client = MlflowClient(store.uri)
    run_ids = list(collect.load_runs(client, "gaca")["run_id"][:4])
    bulk = collect.load_curves(client, run_ids, ["eval/success_rate"])
    fallback = collect._threaded_history(client, run_ids, "eval/success_rate")
    pairs = sorted(fallback[["run_id", "step", "value"]].itertuples(index=False, name=None))
    assert pairs == sorted(bulk[["run_id", "step", "value"]].itertuples(index=False, name=None))
