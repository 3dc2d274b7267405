"""Two users, one cluster, one server: alice and bob, each with an MLflow user of their own (created by
the server's admin through MLflow's auth API), sweep through the local SLURM cluster into one
authenticated `gaca mlflow`, each into an experiment of their own. Each sees the other's runs; neither
can delete or change the other's (MLflow's permissions: the creator of an experiment manages it, the
others read it). A secret passed with `backend.env_vars` reaches the SLURM jobs (each resolves it from
its environment, or its run would fail) and is in no file, pickle, log, printed line or `sacct` field."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gaca.bench.tracking import running_server

from ..orchestration.conftest import TINY, cli_env

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.timeout(900)]

USERS = ("alice", "bob")
ONE_RUN = ["detector", "seed=0", "algorithm.detector=entropy", *TINY, "launcher=slurm"]


def create_user(uri: str, admin: dict[str, str], name: str, password: str) -> None:
    """The admin adds an MLflow user (MLflow's auth API, as its UI does)."""
    token = base64.b64encode(
        f"{admin['MLFLOW_TRACKING_USERNAME']}:{admin['MLFLOW_TRACKING_PASSWORD']}".encode()
    ).decode()
    request = urllib.request.Request(
        f"{uri}/api/2.0/mlflow/users/create",
        data=json.dumps({"username": name, "password": password}).encode(),
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200


def as_user(name: str, password: str):
    """Set MLflow's credential variables for this process (the client reads them per request)."""
    os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"] = name, password


def refused(call) -> bool:
    try:
        call()
    except MlflowException as error:
        return "PERMISSION_DENIED" in str(error) or "403" in str(error)
    return False


def sacct_fields(job_ids: list[str]) -> str:
    """Every field sacct has, for every job and step of ``job_ids``."""
    fields = subprocess.run(["sacct", "--helpformat"], capture_output=True, text=True, check=True).stdout.split()
    done = subprocess.run(
        ["sacct", "-j", ",".join(job_ids), "-P", "--format", ",".join(fields)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_users_sweep_on_slurm_into_one_server_and_cannot_touch_each_others_runs(tmp_path: Path):
    secret = f"wandb{secrets.token_hex(8)}"
    passwords = {name: secrets.token_urlsafe(16) for name in USERS}
    server_dir = tmp_path / "server"
    server_dir.mkdir()
    saved = {name: os.environ.get(name) for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")}
    with running_server(server_dir, f"sqlite:///{server_dir / 'mlflow.db'}") as server:
        for name in USERS:
            create_user(server.uri, server.credentials(), name, passwords[name])
        sweeps = {}
        for name in USERS:
            work = tmp_path / name
            work.mkdir()
            env = cli_env(
                MLFLOW_TRACKING_URI=server.uri,
                MLFLOW_TRACKING_USERNAME=name,
                MLFLOW_TRACKING_PASSWORD=passwords[name],
            )
            command = [*ONE_RUN, f"tracking.experiment=gaca-{name}", f"+backend.env_vars.WANDB_API_KEY={secret}"]
            sweeps[name] = subprocess.Popen(
                [sys.executable, "-m", "gaca.cli", "sweep", *command],
                cwd=work,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        printed = {name: sweep.communicate(timeout=800) for name, sweep in sweeps.items()}
        client = MlflowClient(tracking_uri=server.uri)
        try:
            runs, checks = {}, {}
            for name in USERS:
                other = next(user for user in USERS if user != name)
                as_user(name, passwords[name])
                experiment = client.get_experiment_by_name(f"gaca-{other}")
                seen = client.search_runs([experiment.experiment_id]) if experiment else []
                runs[other] = seen
                if seen:
                    run_id = seen[0].info.run_id
                    checks[name] = {
                        "delete": refused(lambda run_id=run_id: client.delete_run(run_id)),
                        "tag": refused(lambda run_id=run_id: client.set_tag(run_id, "gaca.note", "mine")),
                        "metric": refused(lambda run_id=run_id: client.log_metric(run_id, "eval/success_rate", 1.0)),
                        "end": refused(lambda run_id=run_id: client.set_terminated(run_id, "FAILED")),
                    }
            states = {name: [(r.info.status, r.info.lifecycle_stage) for r in runs[name]] for name in USERS}
        finally:
            for variable, value in saved.items():
                os.environ.pop(variable, None) if value is None else os.environ.__setitem__(variable, value)

    for name, (out, err) in printed.items():
        assert sweeps[name].returncode == 0, f"{name}: {out[-2000:]}{err[-3000:]}"
    for name in USERS:
        assert states[name] == [("FINISHED", "active")], states  # seen by the other, untouched by them
        assert checks[name] == {"delete": True, "tag": True, "metric": True, "end": True}, (name, checks)
    job_ids = sorted({path.name for path in tmp_path.glob("*/multirun/*/*/jobs/*") if path.name[:1].isdigit()})
    assert len(job_ids) >= 2, job_ids
    assert secret not in sacct_fields(job_ids)
    assert all(secret not in out + err for out, err in printed.values())
    assert "WANDB_API_KEY=***" in "".join(out + err for out, err in printed.values())
    holding = [path for path in tmp_path.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]
    assert holding == []  # job pickles, sbatch scripts, job logs, the store, artifacts, the server's logs
