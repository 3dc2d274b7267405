"""A full disk: a checkpoint or artifact write that fails ends the run with one line naming the path,
the previous checkpoint stays published and intact, and once there is space again the rerun resumes
from it to the results of an uninterrupted run. The failure is injected (ENOSPC from the write)."""

from __future__ import annotations

import errno

import pytest
import torch
from mlflow.tracking import MlflowClient

from gaca.backends.cpu import checkpoint
from gaca.backends.cpu.checkpoint import CheckpointWriteError, checkpoint_folders, verify
from gaca.backends.cpu.loop import train
from gaca.tracking.run import ArtifactWriteError, RunLogger

SIX = ("trainer.iterations=6", "trainer.checkpoint_every=2", "algorithm=grpo", "trainer.init=scratch")
"""Six iterations, checkpoints after 2, 4 and 6; no behaviour-cloning prior stage (seconds)."""
RESULTS = ("train/success_rate", "loss/policy", "eval/success_rate", "final/eval_success_rate")


def history(client: MlflowClient, run_id: str) -> dict[str, list[tuple[int, float]]]:
    return {key: [(m.step, m.value) for m in client.get_metric_history(run_id, key)] for key in RESULTS}


def test_a_checkpoint_write_on_a_full_disk_fails_in_one_line_and_the_rerun_resumes(
    workdir, compose_run, monkeypatch, capsys
):
    tmp_path, uri = workdir
    run, resolved = compose_run(*SIX, "output_dir=straight")
    straight = train(run, resolved, quiet=True)

    run, resolved = compose_run(*SIX, "output_dir=full", "tracking.experiment=full")  # the same run, logged apart
    real_save = torch.save

    def save_until_full(obj, path, *args, **kwargs):
        if "iter-00004" in str(path):
            real_save(obj, path, *args, **kwargs)  # a part of the file reached the disk
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(checkpoint.torch, "save", save_until_full)
    with pytest.raises(CheckpointWriteError) as failure:
        train(run, resolved, quiet=True)
    monkeypatch.setattr(checkpoint.torch, "save", real_save)
    folder = tmp_path / "full" / straight.run_key
    message = str(failure.value)
    assert "\n" not in message
    assert f"cannot write checkpoint {folder / 'iter-00004.partial'} (No space left on device)" in message
    assert f"the previous checkpoint {folder / 'iter-00002'} is intact" in message
    assert [p.name for p in checkpoint_folders(folder)] == ["iter-00002"]
    assert not list(folder.glob("*.partial")) and (folder / "LATEST").read_text() == "iter-00002"
    verify(folder / "iter-00002")
    client = MlflowClient(uri)
    (failed,) = client.search_runs([client.get_experiment_by_name("full").experiment_id])
    assert failed.info.status == "FAILED"

    capsys.readouterr()
    resumed = train(run, resolved, quiet=True)  # space again
    assert f"resumed run {straight.run_key} from iteration 2" in capsys.readouterr().err
    assert resumed.run_id == failed.info.run_id
    assert client.get_run(resumed.run_id).info.status == "FINISHED"
    assert history(client, resumed.run_id) == history(client, straight.run_id)


def test_an_artifact_write_on_a_full_disk_names_the_artifact_and_where_it_went(workdir, monkeypatch):
    _, uri = workdir
    logger = RunLogger.open(uri, "gaca", "k" * 16, "run", {}, {})

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/store/artifacts/outcomes.json")

    monkeypatch.setattr(logger.client, "log_text", full)
    with pytest.raises(
        ArtifactWriteError,
        match=r"^cannot write artifact outcomes.json of MLflow run \w+ to "
        r"/store/artifacts/outcomes.json \(No space left on device\)",
    ):
        logger.log_text("{}", "outcomes.json")
