"""Restoring a store from its backup (``gaca backup restore``): the SQLite file replaced under an exclusive
lock on its backup folder (refused while a sweep, search or job holds it in use), or a PostgreSQL
database restored from its dump after dumping its current state."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from gaca.tracking.backup import (
    KEEP,
    REPLACED,
    STAMP,
    Backup,
    backup_database,
    backup_folder,
    backups,
    database_anchor,
    quoted_path,
)
from gaca.tracking.store import StoreUnavailable, check_integrity, store_lock


class StoreInUse(RuntimeError):
    """A restore of a store that a running sweep, search or job uses."""


def restore(store: Path, name: str | None = None) -> tuple[Backup, Path | None]:
    """Replace ``store`` by its backup ``name`` (default the newest); (the backup, where the replaced
    store and its journal were moved, or None when there was none)."""
    found = backups(store)
    if not found:
        raise FileNotFoundError(f"{store.absolute()} has no backup in {backup_folder(store)}")
    chosen = found[0] if name is None else next((b for b in found if b.name == name), None)
    if chosen is None:
        raise FileNotFoundError(f"no backup named {name!r}; known: {', '.join(b.name for b in found)}")
    try:
        check_integrity(chosen.path)
    except StoreUnavailable:
        raise StoreUnavailable(
            f"the backup {chosen.path} is itself damaged; name an older one (gaca backup list)"
        ) from None
    folder = backup_folder(store)
    handle = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreInUse(
                f"{store.absolute()} is in use by a running sweep, search or job; stop it "
                "(or wait for it) before restoring"
            ) from None
        with store_lock(f"sqlite:///{store.absolute()}"):
            aside = None
            if store.exists():
                aside = store.with_name(f"{store.name}{REPLACED}{datetime.now(timezone.utc).strftime(STAMP)}")
                os.replace(store, aside)
            for suffix in ("-journal", "-wal", "-shm"):  # a hot journal of the old file must not touch the copy
                side = store.with_name(store.name + suffix)
                if side.exists() and aside is not None:
                    os.replace(side, aside.with_name(aside.name + suffix))
                side.unlink(missing_ok=True)
            partial = store.with_name(store.name + ".partial")
            source, copy = (
                sqlite3.connect(f"file:{quoted_path(chosen.path)}?mode=ro", uri=True),
                sqlite3.connect(partial),
            )
            try:
                source.backup(copy)
            finally:
                copy.close()
                source.close()
            os.replace(partial, store)
    finally:
        os.close(handle)
    return chosen, aside


def restore_database(uri: str, name: str | None = None) -> tuple[Backup, Backup]:
    """Replace the PostgreSQL store ``uri`` by its backup ``name`` (default the newest), after dumping its
    current state as one more backup (PostgreSQL's way of moving it aside); (restored, replaced state)."""
    from gaca.tracking.postgres import BACKUP_SUFFIX, other_connections, restore_dump, shown

    anchor = database_anchor(uri)
    found = backups(anchor, BACKUP_SUFFIX)
    if not found:
        raise FileNotFoundError(f"{shown(uri)} has no backup in {backup_folder(anchor)}")
    chosen = found[0] if name is None else next((b for b in found if b.name == name), None)
    if chosen is None:
        raise FileNotFoundError(f"no backup named {name!r}; known: {', '.join(b.name for b in found)}")
    users = other_connections(uri)
    if users:
        raise StoreInUse(
            f"{shown(uri)} is in use ({users} other connections: a gaca mlflow server, a job or a psql); "
            "stop them before restoring"
        )
    aside = backup_database(uri, "replaced", keep=KEEP + 1)  # the chosen one must survive this rotation
    restore_dump(uri, chosen.path)
    return chosen, aside
