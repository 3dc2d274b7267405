"""The MLflow store: where it is, and creating it under a lock between processes before anything logs."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

DEFAULT_STORE = "mlflow.db"
LOCK_SUFFIX = ".lock"
"""``mlflow.db.lock`` beside an SQLite store: held (flock) while a process creates or migrates it."""


def configured_tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else an SQLite file in the working folder; as given,
    credentials included (show it through ``gaca.tracking.secrets.redact_uri``)."""
    if uri:
        return uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    return f"sqlite:///{Path.cwd() / DEFAULT_STORE}"


def resolve_tracking_uri(uri: str | None = None) -> str:
    """The URI to connect to: ``configured_tracking_uri`` without its ``user:password@``.

    The credentials move to MLflow's own ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``
    (inherited by the jobs this process starts), so that no config, param or job pickle holds them.
    A redacted URI (``http://alice:***@host``, as jobs receive it) takes them from those variables.
    """
    from gaca.tracking.secrets import MASK, split_userinfo

    configured = configured_tracking_uri(uri)
    bare, user, password = split_userinfo(configured)
    if password is None:  # no user-info, or a lone user part (a token) that the URI must keep
        return bare if user == MASK else configured
    if password != MASK:
        os.environ["MLFLOW_TRACKING_USERNAME"] = unquote(user or "")
        os.environ["MLFLOW_TRACKING_PASSWORD"] = unquote(password)
    return bare


def sqlite_path(uri: str) -> Path | None:
    """The database file of an ``sqlite:///`` URI (relative or absolute), None for any other store."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri == f"{prefix}:memory:":
        return None
    return Path(uri[len(prefix) :].split("?", 1)[0])


def store_exists(uri: str) -> bool:
    """False for an SQLite store whose file is not there yet (reading must not create it)."""
    path = sqlite_path(uri)
    return path is None or path.exists()


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Hold the store's inter-process lock (SQLite only; a server serialises its own clients).

    Alembic's migrations of a fresh SQLite file are not safe against each other: eight processes
    creating one at once all fail and leave it half-migrated (FACTS.md). The OS drops the lock when
    its holder dies, however it dies.
    """
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + LOCK_SUFFIX), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare_store(uri: str, experiment: str) -> str:
    """Create the store's schema and the experiment if needed; return the experiment id.

    Every process that opens a store calls this first. The first MLflow call of a process builds
    (and on a fresh SQLite file creates and migrates) the store, so it runs under ``store_lock``;
    later calls in the process reuse MLflow's cached store.
    """
    from mlflow.tracking import MlflowClient

    with store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        if found is None:
            try:
                return client.create_experiment(experiment)
            except Exception:  # a server's other client created it first (SQLite: the lock rules that out)
                found = client.get_experiment_by_name(experiment)
                if found is None:
                    raise
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        return found.experiment_id
