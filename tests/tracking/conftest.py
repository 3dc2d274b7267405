"""A fresh PostgreSQL database per test (on the server of `scripts/local-postgres.sh`), dropped afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..conftest import postgres_url


@pytest.fixture
def database() -> Iterator[str]:
    """The URI (password included) of an empty database; the test must be marked ``postgres``."""
    from gaca.tracking.postgres import scratch_database

    url = postgres_url()
    assert url is not None  # the `postgres` marker's gate ran first
    with scratch_database(url, "gaca_test") as uri:
        yield uri
