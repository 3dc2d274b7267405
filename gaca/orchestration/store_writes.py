"""The step every sweep and search takes once, before its jobs write to the store."""

from __future__ import annotations

import sys

from gaca.tracking.backup import backup_database, backup_store, hold_in_use
from gaca.tracking.postgres import is_postgres
from gaca.tracking.store import check_store, prepare_store, sqlite_path


def prepare_for_writes(uri: str, experiment: str, reason: str) -> str:
    """What a sweep or a search does before its jobs write: check the store, back up an SQLite one
    (a line says where), hold it in use, create the store and experiment; the experiment id."""
    check_store(uri)
    path = sqlite_path(uri)
    if is_postgres(uri):
        dumped = backup_database(uri, reason)
        print(f"backup of the MLflow store: {dumped.path} (gaca backup list)", file=sys.stderr, flush=True)
    if path is not None:
        taken = backup_store(path, reason)
        if taken is not None:
            print(f"backup of the MLflow store: {taken.path} (gaca backup list)", file=sys.stderr, flush=True)
        hold_in_use(path)
    return prepare_store(uri, experiment)
