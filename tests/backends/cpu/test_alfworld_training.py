"""The CPU trainer end to end on ALFWorld's real engine (`env=alfworld`, generated games): rollouts,
the estimator, the PPO update, evaluation and the tracking contract, as on the built-in families."""

import importlib.util

import pytest
from mlflow.tracking import MlflowClient

if any(importlib.util.find_spec(name) is None for name in ("alfworld", "textworld")):
    pytest.skip("needs the alfworld extra (pip install 'gaca[alfworld]')", allow_module_level=True)

from gaca.backends.cpu.loop import train

pytestmark = pytest.mark.slow


def test_a_short_gaca_run_trains_on_the_real_engine(workdir, compose_run):
    tmp_path, uri = workdir
    run, resolved = compose_run(
        "env=alfworld",
        f"env.cache_dir={tmp_path / 'games'}",
        "env.num_train_tasks=4",
        "env.num_eval_tasks=2",
        "env.horizon=4",
        "trainer.iterations=2",
        "trainer.tasks_per_iteration=1",
        "trainer.group_size=2",
        "trainer.eval_every=1",
        "trainer.num_eval_tasks=2",
        "trainer.init=scratch",
        "algorithm=gaca",
    )
    result = train(run, resolved, quiet=True)

    client = MlflowClient(uri)
    record = client.get_run(result.run_id)
    assert record.info.status == "FINISHED" and record.data.tags["gaca.env"] == "alfworld"

    def history(key: str) -> list[tuple[int, float]]:
        return [(m.step, m.value) for m in client.get_metric_history(result.run_id, key)]

    assert [step for step, _ in history("train/episode_length")] == [1, 2]
    assert all(0 < length <= 4 for _, length in history("train/episode_length"))
    assert [step for step, _ in history("eval/success_rate")] == [0, 1, 2]
    assert all(value > 0 for _, value in history("loss/entropy"))  # the update ran on real rows
    assert 0 < record.data.metrics["diag/nonsingleton_frac"] <= 1  # anchors recur across the group's rollouts
    # The engine's own text reached the policy (observations are lower-cased and split into words).
    text = open(client.download_artifacts(result.run_id, "transcripts/eval_00002.txt")).read()
    assert "you are in the middle of a room" in text
