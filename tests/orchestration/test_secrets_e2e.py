"""A planted password (in the tracking URI) and API key (in backend.env_vars) leave no trace: every
file a sweep, a single run and a verl dry run write, the server's store and artifacts, and every
line they print are searched for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import TINY, gaca, logged_runs, mlflow_server

pytestmark = pytest.mark.slow

PASSWORD = "s3cretPW9f2c"
API_KEY = "wandbK3y7e41"
ONE_RUN = ["detector", "seed=0", "algorithm.detector=entropy", *TINY]


def files_holding(folder: Path, secrets: tuple[str, ...]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {secret}" for secret in secrets if secret.encode() in data]
    return found


@pytest.mark.timeout(600)
def test_no_artifact_param_log_pickle_or_printed_line_holds_a_planted_secret(tmp_path: Path):
    server_dir, work = tmp_path / "server", tmp_path / "work"
    server_dir.mkdir()
    work.mkdir()
    key_override = f"+backend.env_vars.WANDB_API_KEY={API_KEY}"
    with mlflow_server(server_dir) as bare:
        planted = bare.replace("http://", f"http://alice:{PASSWORD}@")
        port = bare.rsplit(":", 1)[1]
        outputs = [
            # the URI from the environment, and given as an override
            gaca("sweep", *ONE_RUN, key_override, cwd=work, MLFLOW_TRACKING_URI=planted),
            gaca("sweep", *ONE_RUN, "seed=1", key_override, f"tracking.uri={planted}", cwd=work),
            gaca("train", *TINY, "seed=2", key_override, cwd=work, MLFLOW_TRACKING_URI=planted),
            gaca(
                "sweep",
                "main",
                "backend=verl",
                "trainer=paper",
                "model=path",
                "model.path=/models/Qwen2.5-1.5B-Instruct",
                key_override,
                "--dry-run",
                cwd=work,
                MLFLOW_TRACKING_URI=planted,
            ),
            gaca("train", "+backend.env_vars={WANDB_API_KEY: 987654321}", cwd=work, MLFLOW_TRACKING_URI=planted),
        ]
        runs = logged_runs(bare)

    assert [result.returncode for result in outputs] == [0, 0, 0, 0, 2], "\n=====\n".join(
        r.stdout[-1500:] + r.stderr[-1500:] for r in outputs
    )
    printed = "".join(result.stdout + result.stderr for result in outputs)
    assert PASSWORD not in printed and API_KEY not in printed and "987654321" not in printed
    assert "alice\\:***@127.0.0.1" in printed and "WANDB_API_KEY=***" in printed  # shown, masked
    # A job gets backend.env_vars' secret values through its environment, never its submitit pickles:
    # the run folders (runs/), the job folders and their pickles and logs (multirun/) hold neither.
    assert files_holding(work, (PASSWORD, API_KEY)) == []
    assert list(work.glob("multirun/*/*/jobs/*/*.pkl")) and list(work.glob("runs/*/LATEST"))
    assert files_holding(server_dir, (PASSWORD, API_KEY)) == []  # params, tags, artifacts (config.yaml)
    assert sorted(run.status for run in runs) == ["FINISHED"] * 3
    for run in runs:
        assert run.params["backend.env_vars.WANDB_API_KEY"] == "***"
        assert run.params["tracking.uri"] in ("None", f"http://alice:***@127.0.0.1:{port}")
    assert any(run.params["tracking.uri"] == f"http://alice:***@127.0.0.1:{port}" for run in runs)
    assert (work / "multirun").is_dir()  # the job pickles and logs were searched
