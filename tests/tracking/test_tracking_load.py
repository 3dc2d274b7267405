"""`gaca bench tracking` at small N: runs logging at the trainer's pace into a real authenticated server lose
no metric point and duplicate none, also when the server (SQLite behind it) or the PostgreSQL database
behind it is restarted while they write; every run finishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaca.bench.tracking import Pace, measure

from ..conftest import postgres_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PACE = Pace(seconds=15.0, interval=1.0, eval_every=2, checkpoint_every=3, checkpoint_mb=0.2)
WRITERS = 4


def assert_nothing_lost(row: dict) -> None:
    assert row["runs finished"] == f"{WRITERS}/{WRITERS}", row
    assert row["failed after retries"] == 0, row
    assert row["lost"] == 0 and row["duplicated"] == 0, row
    assert row["iterations logged"] >= WRITERS * 2 and row["metric points"] > 0, row


def test_writers_lose_nothing_when_the_server_restarts_under_them(tmp_path: Path):
    row = measure("sqlite", WRITERS, PACE, tmp_path, None, restart="server")
    assert_nothing_lost(row)
    assert row["restart (s)"] > 0


@pytest.mark.postgres
def test_writers_lose_nothing_when_the_database_restarts_under_them(tmp_path: Path):
    row = measure("postgresql", WRITERS, PACE, tmp_path, postgres_url(), restart="database")
    assert_nothing_lost(row)
