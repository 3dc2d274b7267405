"""The backend=verl job wrapper end to end on this machine, through the real `gaca train` CLI, with the
CPU stand-in as the trainer process: the MLflow run it makes (tags, params, verl's metrics and the
contract's), a skipped rerun, a crashed trainer (FAILED, then resumed into the same run), and bad
configs that launch nothing."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from gaca.backends.verl.launcher.metrics import VERL_TO_CONTRACT

from .conftest import MODEL, PAPER, gaca, standin_overrides

pytestmark = [pytest.mark.verl, pytest.mark.slow]
pytest.importorskip("verl", reason="the stand-in logs through verl's own MLflow logger")


def val_success(step: int) -> float:
    """What the stand-in reports for validation at ``step`` (tests/backends/verl/jobs/standin_main_ppo.py)."""
    return round(0.1 + 0.02 * step, 6)


def only_run(uri: str):
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("gaca")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1, f"expected one MLflow run, found {len(runs)}"
    return client, runs[0]


def history(client: MlflowClient, run_id: str, metric: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, metric))


@pytest.mark.timeout(600)
def test_the_wrapper_logs_a_verl_run_as_the_contract_says_and_skips_it_once_finished(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = [*standin_overrides(iterations=5, eval_every=2), "algorithm=gigpo", "env=shop", "seed=1"]
    done = gaca("train", *overrides, cwd=tmp_path, MLFLOW_TRACKING_URI=uri)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "eval success by iteration {0: 0.10, 2: 0.14, 4: 0.18, 5: 0.20}" in done.stdout

    client, run = only_run(uri)  # verl's logger wrote into the wrapper's run, not a run of its own
    tags, params = run.data.tags, run.data.params
    assert run.info.status == "FINISHED"
    assert {
        k: tags[k] for k in ("gaca.block", "gaca.method", "gaca.env", "gaca.seed", "gaca.scale", "gaca.backend")
    } == {
        "gaca.block": "adhoc",
        "gaca.method": "gigpo",
        "gaca.env": "shop",
        "gaca.seed": "1",
        "gaca.scale": "Qwen2.5-1.5B-Instruct",
        "gaca.backend": "verl",
    }
    assert len(tags["gaca.run_key"]) == 16 and tags["gaca.git_commit"]
    # The project's params (dotted) and verl's own (slashed, logged by verl's MLflow logger).
    assert params["backend.name"] == "verl" and params["model.path"] == MODEL and params["trainer.lr"] == "1e-06"
    assert params["actor_rollout_ref/actor/optim/lr"] == "1e-06"
    assert params["env/rollout/n"] == "8" and params["env/max_steps"] == "15" and params["env/env_name"] == "Webshop"
    assert params["algorithm/adv_estimator"] == "gigpo" and params["algorithm/gigpo/step_advantage_w"] == "1.0"
    assert params["trainer/experiment_name"] == run.info.run_name

    evaluations = [(step, val_success(step)) for step in (0, 2, 4, 5)]
    assert history(client, run.info.run_id, "val/success_rate") == evaluations
    assert history(client, run.info.run_id, "eval/success_rate") == evaluations
    for source, target in VERL_TO_CONTRACT.items():
        assert history(client, run.info.run_id, target) == history(client, run.info.run_id, source), target
    assert [step for step, _ in history(client, run.info.run_id, "train/success_rate")] == [1, 2, 3, 4, 5]
    assert history(client, run.info.run_id, "final/eval_success_rate") == [(5, val_success(5))]
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)} | {
        a.path for a in client.list_artifacts(run.info.run_id, "verl")
    }
    assert {"config.yaml", "verl/command.sh"} <= artifacts
    command = client.download_artifacts(run.info.run_id, "verl/command.sh", str(tmp_path))
    text = open(command).read()
    assert f"MLFLOW_RUN_ID={run.info.run_id}" in text and "++env.rollout.n=8" in text

    # Analysis takes it as it takes a CPU run: a cell of its own, scored by its final evaluation.
    from analysis.runs.cells import screen, select
    from analysis.runs.collect import load_curves, load_runs

    runs = load_runs(client, "gaca")
    cell = screen(runs, wanted=())["cell"].iloc[0]
    ledger = select(screen(runs, wanted={cell}), load_curves(client, list(runs["run_id"])), "final")
    assert ledger["reason"].isna().all() and ledger["score"].tolist() == [val_success(5)]
    assert (cell.env, cell.scale) == ("shop", "Qwen2.5-1.5B-Instruct")

    again = gaca("train", *overrides, cwd=tmp_path, MLFLOW_TRACKING_URI=uri)
    assert again.returncode == 0 and "was already finished" in again.stdout
    assert only_run(uri)[1].info.run_id == run.info.run_id


@pytest.mark.timeout(600)
def test_a_crashed_trainer_fails_the_run_and_a_rerun_resumes_it_in_the_same_mlflow_run(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = standin_overrides(iterations=4, eval_every=2)
    crashed = gaca(
        "train", *overrides, "+backend.env_vars.STANDIN_FAIL_AFTER='2'", cwd=tmp_path, MLFLOW_TRACKING_URI=uri
    )
    assert crashed.returncode != 0
    assert "the verl trainer exited with status 3" in crashed.stderr
    client, run = only_run(uri)
    # MLflow ends the trainer's run as FINISHED at exit; the wrapper sets the truth.
    assert run.info.status == "FAILED"
    assert "final/eval_success_rate" not in run.data.metrics

    resumed = gaca("train", *overrides, cwd=tmp_path, MLFLOW_TRACKING_URI=uri)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    client, after = only_run(uri)
    assert after.info.run_id == run.info.run_id and after.info.status == "FINISHED"
    # verl validates again at the step it resumes from; the contract's curve has each step once.
    assert history(client, run.info.run_id, "eval/success_rate") == [(s, val_success(s)) for s in (0, 2, 4)]
    assert [s for s, _ in history(client, run.info.run_id, "train/success_rate")] == [1, 2, 3, 4]
    assert history(client, run.info.run_id, "final/eval_success_rate") == [(4, val_success(4))]


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["backend=verl", "env=household", "trainer=paper"], "model=path model.path="),
        (["backend=verl", "env=household", "model=path", f"model.path={MODEL}"], "trainer.init=bc"),
        ([*PAPER, "env.horizon=0"], "horizon"),
    ],
)
def test_a_bad_verl_config_exits_2_naming_the_key_and_creates_nothing(tmp_path, overrides, named):
    result = gaca("train", *overrides, cwd=tmp_path, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert result.returncode == 2
    assert named in result.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "runs").exists()
