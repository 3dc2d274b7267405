"""End-to-end tiny training runs: the tracking contract, resume equivalence, skipping finished runs."""

import csv
import io

import pytest
import torch
from mlflow.tracking import MlflowClient

from gaca import contract
from gaca.backends.cpu.loop import train
from gaca.backends.lifecycle import Stopped

pytestmark = pytest.mark.slow


def only_run(uri):
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("gaca")
    runs = client.search_runs([experiment.experiment_id])
    return client, runs


def test_run_follows_the_tracking_contract(workdir, compose_run):
    _, uri = workdir
    run, resolved = compose_run("algorithm=gaca", "seed=1", "trainer.lr_schedule=linear")
    result = train(run, resolved, quiet=True)
    client, runs = only_run(uri)
    assert len(runs) == 1
    record = runs[0]
    assert record.info.status == "FINISHED" and record.info.run_id == result.run_id
    tags = record.data.tags
    assert tags["gaca.run_key"] == result.run_key
    assert (tags["gaca.block"], tags["gaca.method"], tags["gaca.env"], tags["gaca.seed"]) == (
        "adhoc",
        "gaca",
        "errand",
        "1",
    )
    assert tags["gaca.scale"] == "tiny" and tags["gaca.backend"] == "cpu" and tags["gaca.git_commit"]
    params = record.data.params
    assert params["algorithm.lambda0"] == "0.5" and params["trainer.group_size"] == "4" and params["env.horizon"] == "6"
    # a gated estimator logs every contract metric but those of remote workers
    assert set(record.data.metrics) == set(contract.METRICS) - set(contract.REMOTE_WORKER_METRICS)
    iterations = [m.step for m in client.get_metric_history(record.info.run_id, "train/success_rate")]
    assert iterations == [1, 2, 3, 4]
    rates = [m.value for m in client.get_metric_history(record.info.run_id, "train/lr")]  # annealed
    assert rates == pytest.approx([run.trainer.lr_at(i) for i in iterations]) and rates == sorted(rates, reverse=True)
    assert rates[-1] < rates[0]
    evaluations = client.get_metric_history(record.info.run_id, "eval/success_rate")
    assert [m.step for m in evaluations] == [0, 2, 4]
    assert record.data.metrics["final/eval_success_rate"] == evaluations[-1].value == result.final_eval_success
    artifacts = {a.path for a in client.list_artifacts(record.info.run_id)}
    assert {"config.yaml", "eval", "transcripts", "diag"} <= artifacts
    outcomes = client.download_artifacts(record.info.run_id, "eval/outcomes_00004.csv")
    rows = list(csv.DictReader(open(outcomes)))
    assert [int(r["task_id"]) for r in rows] == [0, 1, 2, 3]
    assert sum(int(r["success"]) for r in rows) / 4 == pytest.approx(result.final_eval_success)
    histogram = open(client.download_artifacts(record.info.run_id, "diag/criticality_hist.csv")).read()
    counts = [int(r["count"]) for r in csv.DictReader(io.StringIO(histogram))]
    assert len(counts) == 41 and sum(counts) > 0  # 40 bins of 0.1, then the overflow bin


def test_resume_equals_uninterrupted(workdir, compose_run):
    tmp_path, uri = workdir
    annealed = "trainer.lr_schedule=linear"  # the rate follows the iteration across the resume
    run, resolved = compose_run("algorithm=gaca", "output_dir=straight", annealed)
    straight = train(run, resolved, quiet=True)
    weights = {k: v.clone() for k, v in _policy_weights(tmp_path / "straight" / straight.run_key).items()}

    resumed_run, resumed_resolved = compose_run(
        "algorithm=gaca", "output_dir=resumed", "tracking.experiment=resumed", annealed
    )
    with pytest.raises(Stopped):
        train(resumed_run, resumed_resolved, quiet=True, stop_after=2)
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("resumed")
    (killed,) = client.search_runs([experiment.experiment_id])
    assert killed.info.status == "KILLED"
    second = train(resumed_run, resumed_resolved, quiet=True)
    assert second.run_id == killed.info.run_id  # the same MLflow run continues
    (finished,) = client.search_runs([experiment.experiment_id])
    assert finished.info.status == "FINISHED"

    for key in ("train/success_rate", "loss/policy", "loss/kl", "eval/success_rate", "diag/lambda_std"):
        a = [(m.step, m.value) for m in client.get_metric_history(straight.run_id, key)]
        b = [(m.step, m.value) for m in client.get_metric_history(second.run_id, key)]
        assert a == b, key  # same points, none duplicated
    resumed_weights = _policy_weights(tmp_path / "resumed" / second.run_key)
    for name, value in weights.items():
        torch.testing.assert_close(resumed_weights[name], value, rtol=0, atol=0)


def test_finished_run_is_skipped(workdir, compose_run):
    _, uri = workdir
    run, resolved = compose_run("algorithm=grpo")
    first = train(run, resolved, quiet=True)
    again = train(run, resolved, quiet=True)
    assert again.skipped and again.run_id == first.run_id
    _, runs = only_run(uri)
    assert len(runs) == 1


def _policy_weights(checkpoint_dir):
    from gaca.backends.cpu.checkpoint import load_checkpoint

    return load_checkpoint(checkpoint_dir).policy.model.state_dict()


def test_a_longer_run_extends_a_finished_shorter_one_to_the_same_numbers(workdir, compose_run):
    """4 iterations, then the same configuration with 6: iterations 5-6 only, and every point, artifact
    and weight as a 6-iteration run from iteration 0 (in another experiment, which has no shorter run)."""
    tmp_path, uri = workdir
    short_run, short_resolved = compose_run("algorithm=gaca", "trainer.iterations=3")
    short = train(short_run, short_resolved, quiet=True)
    run, resolved = compose_run("algorithm=gaca", "trainer.iterations=6")
    extended = train(run, resolved, quiet=True)
    fresh_run, fresh_resolved = compose_run(
        "algorithm=gaca", "trainer.iterations=6", "tracking.experiment=fresh", "output_dir=fresh"
    )
    fresh = train(fresh_run, fresh_resolved, quiet=True)

    client = MlflowClient(uri)
    record = client.get_run(extended.run_id)
    assert extended.run_key == fresh.run_key != short.run_key and extended.run_id not in (short.run_id, fresh.run_id)
    assert record.info.status == "FINISHED"
    assert record.data.tags[contract.TAG_EXTENDED_FROM] == f"{short.run_id}@3"
    assert contract.TAG_EXTENDED_FROM not in client.get_run(fresh.run_id).data.tags
    assert extended.final_eval_success == fresh.final_eval_success
    for key in set(contract.METRICS) - set(contract.REMOTE_WORKER_METRICS):
        if key.startswith("perf/"):
            continue  # seconds
        a = [(m.step, m.value) for m in client.get_metric_history(fresh.run_id, key)]
        b = [(m.step, m.value) for m in client.get_metric_history(extended.run_id, key)]
        assert a == b, key
    # the short run evaluated at its last iteration, 3; a 6-iteration run evaluates at 0, 2, 4, 6 only
    assert [m.step for m in client.get_metric_history(extended.run_id, "eval/success_rate")] == [0, 2, 4, 6]
    assert "final/eval_success_rate" in client.get_run(short.run_id).data.metrics
    for name in ("eval/outcomes_00002.csv", "eval/outcomes_00006.csv"):
        ours = open(client.download_artifacts(extended.run_id, name)).read()
        assert ours == open(client.download_artifacts(fresh.run_id, name)).read(), name
    evaluations = {a.path.rsplit("/", 1)[-1] for a in client.list_artifacts(extended.run_id, "eval")}
    assert "outcomes_00003.csv" not in evaluations
    for name, value in _policy_weights(tmp_path / "fresh" / fresh.run_key).items():
        torch.testing.assert_close(_policy_weights(tmp_path / "runs" / extended.run_key)[name], value, rtol=0, atol=0)
    assert client.get_run(short.run_id).data.tags.get(contract.TAG_EXTENDED_FROM) is None  # left as it was


@pytest.mark.parametrize("setting", ["trainer.lr_schedule=linear", "extend=false"])
def test_no_extension_where_the_first_iterations_differ_or_it_is_off(workdir, compose_run, setting):
    _, uri = workdir
    train(*compose_run("algorithm=grpo", "trainer.iterations=2", setting), quiet=True)
    longer = train(*compose_run("algorithm=grpo", "trainer.iterations=3", setting), quiet=True)
    tags = MlflowClient(uri).get_run(longer.run_id).data.tags
    assert contract.TAG_EXTENDED_FROM not in tags
