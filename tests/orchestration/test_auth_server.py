"""`gaca mlflow` off loopback: MLflow's basic-auth app turned on by itself, credentials generated once
in a private file, strangers refused (401), a sweep with the credentials logging normally, and a
wrong password a one-line error before any run starts."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .conftest import TINY, cli_env, free_port, gaca, healthy, logged_runs, wait_for

pytestmark = pytest.mark.slow

ONE_RUN = ["detector", "seed=0", "algorithm.detector=entropy", *TINY]
SEARCH = "api/2.0/mlflow/experiments/search?max_results=1"


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def read_credentials(path: Path) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#")
    )


def test_a_server_on_every_interface_requires_the_generated_credentials(tmp_path: Path, monkeypatch):
    server_dir, work = tmp_path / "server", tmp_path / "work"
    server_dir.mkdir()
    work.mkdir()
    refused = gaca("mlflow", "--host", "0.0.0.0", "--", "--app-name", "other", cwd=server_dir)
    assert refused.returncode == 2 and "needs authentication" in refused.stderr
    assert not (server_dir / "mlflow-auth").exists()

    port = free_port()
    log_path = server_dir / "server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gaca.cli",
                "mlflow",
                "--host",
                "0.0.0.0",
                "--port",
                str(port),
                "--",
                "--allowed-hosts",
                f"127.0.0.1:{port},localhost:{port}",
            ],
            cwd=server_dir,
            env=cli_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    uri = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthy(uri), 180, "the MLflow server to answer /health", interval_s=1)
        folder = server_dir / "mlflow-auth"
        credentials = read_credentials(folder / "credentials")
        password = credentials["MLFLOW_TRACKING_PASSWORD"]
        assert len(password) >= 32
        assert stat.S_IMODE((folder / "credentials").stat().st_mode) == 0o600
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert status_of(f"{uri}/{SEARCH}") == 401  # a stranger

        good = {"MLFLOW_TRACKING_URI": uri, **credentials}
        swept = gaca("sweep", *ONE_RUN, cwd=work, **good)
        wrong = gaca("sweep", *ONE_RUN, "seed=1", cwd=work, **{**good, "MLFLOW_TRACKING_PASSWORD": "not-the-password"})
        anonymous = gaca("status", "detector", cwd=work, MLFLOW_TRACKING_URI=uri)

        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", credentials["MLFLOW_TRACKING_USERNAME"])
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password)
        runs = logged_runs(uri)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)

    assert swept.returncode == 0, swept.stderr[-3000:]
    assert [run.status for run in runs] == ["FINISHED"]  # the wrong password created no run
    assert wrong.returncode != 0
    error_lines = wrong.stderr.strip().splitlines()
    assert len(error_lines) == 1 and "refused user" in error_lines[0] and "nothing was launched" in error_lines[0]
    assert "Traceback" not in wrong.stderr and "launching" not in wrong.stdout
    assert anonymous.returncode == 1 and "requires authentication" in anonymous.stderr
    printed = log_path.read_text() + "".join(r.stdout + r.stderr for r in (swept, wrong, anonymous))
    assert "basic authentication on" in printed and password not in printed
    for path in [*work.rglob("*"), *(p for p in server_dir.rglob("*") if "mlflow-auth" not in p.parts)]:
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path  # no pickle, param, artifact or log holds it

    from gaca.tracking.auth import ensure_auth

    assert ensure_auth(server_dir / "mlflow-auth")[0].password == password  # generated once, kept
