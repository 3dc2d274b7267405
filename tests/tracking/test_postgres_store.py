"""A PostgreSQL store behind `gaca mlflow`: bad input refused in one line (password masked, exit 2, within
30 s, before anything is created), a sweep logged through the server into it, and its backups taken,
listed and restored with `gaca backup`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gaca.bench.tracking import running_server
from gaca.tracking.postgres import connect, scratch_database, shown, split_password
from gaca.tracking.store import prepare_store

from ..conftest import postgres_url
from ..orchestration.conftest import TINY, gaca, logged_runs

ONE_RUN = ["detector", "seed=0", "algorithm.detector=entropy", *TINY]


def test_the_password_leaves_the_uri_and_is_never_shown():
    uri = "postgresql://alice:p%40ss@db.example:5433/mlflow"
    assert split_password(uri) == ("postgresql://alice@db.example:5433/mlflow", "p@ss")
    assert shown(uri) == "the PostgreSQL store postgresql://alice:***@db.example:5433/mlflow"
    assert shown("postgresql://alice@db/x") == "the PostgreSQL store postgresql://alice@db/x"
    assert split_password("postgresql://db/x") == ("postgresql://db/x", None)


def with_password(uri: str, password: str) -> str:
    without, _ = split_password(uri)
    scheme, rest = without.split("://", 1)
    user, place = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{place}"


@pytest.mark.postgres
def test_a_store_that_cannot_be_used_is_one_line_and_exit_2_before_anything_exists(database: str, tmp_path: Path):
    password = split_password(database)[1]
    assert password
    port = split_password(database)[0].rsplit(":", 1)[1].split("/")[0]
    with (
        scratch_database(postgres_url(), "gaca_foreign") as foreign,
        scratch_database(postgres_url(), "gaca_old") as old,
    ):
        connection = connect(foreign)
        connection.execute("CREATE TABLE invoices (id integer)")
        connection.close()
        prepare_store(old, "gaca")  # MLflow's schema at its head revision, then moved back to an unknown one
        connection = connect(old)
        connection.execute("UPDATE alembic_version SET version_num = '0123456789ab'")
        connection.close()
        cases = {
            "nothing listens": database.replace(f":{port}/", ":1/"),
            "wrong user name or password": with_password(database, "not-the-password"),
            "the host 'localhots' is unknown": database.replace("127.0.0.1", "localhots"),
            "did you mean postgresql://": database.replace("postgresql://", "postgressql://"),
            "has no database": database.rsplit("/", 1)[0] + "/no_such_database",
            "no MLflow schema": foreign,
            "revision 0123456789ab": old,
        }
        results = {}
        for expected, uri in cases.items():
            began = time.monotonic()
            results[expected] = gaca("mlflow", "--store", uri, cwd=tmp_path, timeout=60), time.monotonic() - began
    for expected, (result, seconds) in results.items():
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, (expected, result.stderr[-2000:])
        assert len(lines) == 1 and expected in lines[0], (expected, lines)
        assert password not in result.stderr + result.stdout and "not-the-password" not in result.stderr
        assert seconds < 30, (expected, seconds)
    assert not (tmp_path / "mlflow-auth").exists() and not (tmp_path / "mlflow-backups").exists()
    connection = connect(database)
    assert connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
    connection.close()


@pytest.mark.postgres
def test_a_sweep_without_the_database_password_is_refused_before_any_run(database: str, tmp_path: Path):
    wrong = with_password(database, "not-the-password")
    result = gaca("sweep", *ONE_RUN, cwd=tmp_path, MLFLOW_TRACKING_URI=wrong)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "wrong user name or password" in lines[0], lines
    assert "not-the-password" not in result.stderr and not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(600)
def test_a_sweep_logs_through_the_server_into_postgresql_and_a_backup_restores(database: str, tmp_path: Path):
    server_dir, work = tmp_path / "server", tmp_path / "work"
    server_dir.mkdir()
    work.mkdir()
    password = split_password(database)[1]
    with running_server(server_dir, database) as server:
        credentials = server.credentials()
        swept = gaca("sweep", *ONE_RUN, cwd=work, MLFLOW_TRACKING_URI=server.uri, **credentials)
        os.environ.update(credentials)
        try:
            runs = logged_runs(server.uri)
        finally:
            for name in credentials:
                os.environ.pop(name)
        busy = gaca("backup", "restore", "--tracking-uri", database, cwd=server_dir)
    assert swept.returncode == 0, swept.stderr[-3000:]
    assert [run.status for run in runs] == ["FINISHED"]
    assert runs[0].history["final/eval_success_rate"]
    assert busy.returncode == 1 and "is in use" in busy.stderr  # the server's connections

    taken = gaca("backup", "now", "--tracking-uri", database, cwd=server_dir)
    listed = gaca("backup", "list", "--tracking-uri", database, cwd=server_dir)
    assert taken.returncode == 0 and listed.returncode == 0, taken.stderr + listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines() if line.startswith("gaca_test")]
    assert [(row[3], row[-2]) for row in rows] == [("by-hand", "1"), ("server-start", "0")]  # newest first

    oldest = rows[-1][0]
    restored = gaca("backup", "restore", oldest, "--tracking-uri", database, cwd=server_dir)
    assert restored.returncode == 0, restored.stderr
    connection = connect(database)
    assert connection.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # the state before the sweep
    connection.close()
    back = gaca("backup", "restore", "--tracking-uri", database, cwd=server_dir)  # the newest: the replaced state
    assert back.returncode == 0, back.stderr
    connection = connect(database)
    assert connection.execute("SELECT status FROM runs").fetchall() == [("FINISHED",)]
    connection.close()
    printed = "".join(r.stdout + r.stderr for r in (swept, busy, taken, listed, restored, back))
    assert password not in printed and all(password not in log.read_text() for log in server.log)
