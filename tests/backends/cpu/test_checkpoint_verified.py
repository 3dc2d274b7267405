"""Verified checkpoints: a damaged newest checkpoint is reported with its path and the run resumes
from the previous intact one (to the same results); with none intact it starts over, saying so."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from gaca.backends.cpu.checkpoint import MANIFEST, CorruptCheckpoint, checkpoint_folders, load_checkpoint, verify
from gaca.backends.cpu.loop import train
from gaca.backends.lifecycle import Stopped

SIX = ("trainer.iterations=6", "trainer.checkpoint_every=2", "algorithm=grpo")
RESULTS = ("train/success_rate", "loss/policy", "eval/success_rate", "final/eval_success_rate")


def history(client: MlflowClient, run_id: str) -> dict[str, list[tuple[int, float]]]:
    return {key: [(m.step, m.value) for m in client.get_metric_history(run_id, key)] for key in RESULTS}


def killed_after_four(compose_run, output_dir: str):
    """A run stopped after iteration 4: checkpoints iter-00002 and iter-00004 on disk, MLflow run KILLED."""
    run, resolved = compose_run(*SIX, f"output_dir={output_dir}", f"tracking.experiment={output_dir}")
    with pytest.raises(Stopped):
        train(run, resolved, quiet=True, stop_after=4)
    return run, resolved


def test_a_truncated_latest_checkpoint_is_reported_and_the_previous_one_resumes_to_the_same_results(
    workdir, compose_run, capsys
):
    tmp_path, uri = workdir
    run, resolved = compose_run(*SIX, "output_dir=straight")
    straight = train(run, resolved, quiet=True)

    run, resolved = killed_after_four(compose_run, "damaged")
    newest, previous = checkpoint_folders(tmp_path / "damaged" / straight.run_key)
    assert (newest.name, previous.name) == ("iter-00004", "iter-00002")
    state = newest / "state.pt"
    state.write_bytes(state.read_bytes()[:100])
    capsys.readouterr()

    resumed = train(run, resolved, quiet=True)
    err = capsys.readouterr().err
    assert f"checkpoint {newest} is damaged (state.pt has 100 bytes" in err
    assert f"resumed run {straight.run_key} from iteration 2 ({previous})" in err
    client = MlflowClient(uri)
    assert client.get_run(resumed.run_id).info.status == "FINISHED"
    assert history(client, resumed.run_id) == history(client, straight.run_id)


def test_with_no_intact_checkpoint_the_run_starts_over_and_says_so(workdir, compose_run, capsys):
    tmp_path, uri = workdir
    run, resolved = killed_after_four(compose_run, "ruined")
    folder = tmp_path / "ruined"
    for checkpoint in checkpoint_folders(next(p for p in folder.iterdir() if p.name != "bc-cache")):
        weights = checkpoint / "policy" / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:-10])
    capsys.readouterr()

    result = train(run, resolved, quiet=True)
    err = capsys.readouterr().err
    assert err.count("is damaged (policy/model.safetensors has") == 2
    assert "no intact checkpoint in" in err and "the run starts over from iteration 0" in err
    assert MlflowClient(uri).get_run(result.run_id).info.status == "FINISHED"


def test_a_flipped_byte_fails_the_checksum_and_a_checkpoint_without_manifest_is_checked_by_loading(
    workdir, compose_run
):
    tmp_path, _ = workdir
    killed_after_four(compose_run, "flipped")
    directory = next(p for p in (tmp_path / "flipped").iterdir() if p.name != "bc-cache")
    newest, previous = checkpoint_folders(directory)
    weights = newest / "policy" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CorruptCheckpoint, match="policy/model.safetensors does not match its SHA-256 checksum"):
        verify(newest)
    lines: list[str] = []
    assert load_checkpoint(directory, report=lines.append).iteration == 2
    assert len(lines) == 1 and str(newest) in lines[0]

    (previous / MANIFEST).unlink()  # as written before manifests existed
    assert load_checkpoint(previous.parent, report=lines.append).iteration == 2
    assert json.loads((newest / MANIFEST).read_text())["state.pt"]["size"] > 0
