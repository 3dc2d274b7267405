"""Backups of the store: a consistent online copy before each sweep or search writes, rotated,
listed and restored by ``gaca backup``.

An SQLite store is copied with SQLite's backup API, which reads the store inside one read transaction:
jobs that write meanwhile wait for it (SQLite's busy timeout) and the copy is a state the store was in.
Its copies live in ``mlflow-backups/`` beside the store, named ``<store>-<UTC time>-<what wrote next>.db``.
A PostgreSQL store is dumped with ``pg_dump`` (one snapshot, writers never wait) to
``mlflow-backups/<database>_<host>_<port>-<UTC time>-<what wrote next>.dump`` in the working folder
(``gaca.tracking.postgres``); ``gaca mlflow`` takes one before it serves such a store.

Sweep and search drivers and every job hold a shared lock on that folder while they use the store;
a restore takes it exclusively, so it refuses to replace a store that a running sweep writes to.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

FOLDER = "mlflow-backups"
KEEP = 10
"""Backups kept per store; the oldest beyond these are deleted after each new one."""
STALE_PARTIAL_S = 600.0
"""A ``*.db.partial`` copy untouched for this long is removed by the next backup (its driver died)."""
REPLACED = ".replaced-"
"""``mlflow.db.replaced-<time>``: a store that a restore moved aside (never deleted by gaca)."""
STAMP = "%Y%m%dT%H%M%SZ"
_NAME = re.compile(
    r"^(?P<store>.+)-(?P<stamp>\d{8}T\d{6}Z)(?:\.(?P<n>\d+))?-(?P<reason>[\w.-]+)(?P<suffix>\.db|\.dump)$"
)
SQLITE_SUFFIX = ".db"
_held: dict[Path, object] = {}
"""Folder -> the open handle that holds this process's shared lock on it."""


@dataclass(frozen=True)
class Backup:
    path: Path
    taken: datetime
    reason: str

    @property
    def name(self) -> str:
        return self.path.name


def backup_folder(store: Path) -> Path:
    return store.absolute().parent / FOLDER


def backups(store: Path, suffix: str = SQLITE_SUFFIX) -> list[Backup]:
    """The backups of ``store`` (an SQLite file, or ``database_anchor`` of a PostgreSQL one), newest first."""
    folder = backup_folder(store)
    found = []
    for path in folder.glob(f"{store.stem}-*{suffix}") if folder.is_dir() else []:
        match = _NAME.match(path.name)
        if match and match["store"] == store.stem and match["suffix"] == suffix:
            taken = datetime.strptime(match["stamp"], STAMP).replace(tzinfo=timezone.utc)
            found.append((taken, int(match["n"] or 0), Backup(path, taken, match["reason"])))
    return [backup for _, _, backup in sorted(found, key=lambda item: item[:2], reverse=True)]


def _partial(store: Path, suffix: str) -> Path:
    """A new file of this process in the backup folder for a copy in progress (named ``*<suffix>.partial``,
    which no listing takes for a backup): drivers started in the same second each write their own."""
    folder = backup_folder(store)
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        path = folder / f"{store.stem}-{os.getpid()}-{secrets.token_hex(4)}{suffix}.partial"
        try:  # the umask's permissions, as SQLite and pg_dump give the files they create (mkstemp: 0600)
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return path


def _place(partial: Path, store: Path, reason: str, suffix: str, now: datetime) -> Backup:
    """Give the finished copy ``partial`` its backup name ``<store>-<now>[.n]-<reason><suffix>``: the first
    free ``n``, claimed atomically (a hard link fails where the name exists), so that two drivers taking a
    backup in the same second keep both and neither overwrites the other's."""
    folder = backup_folder(store)
    reason = re.sub(r"[^\w.-]+", "_", reason) or "backup"
    base = f"{store.stem}-{now.strftime(STAMP)}"
    while True:
        same_second = [_NAME.match(path.name) for path in folder.glob(f"{base}*{suffix}")]
        n = max((int(match["n"] or 0) + 1 for match in same_second if match), default=0)  # unique and ordered
        target = folder / f"{base}{f'.{n}' if n else ''}-{reason}{suffix}"
        try:
            os.link(partial, target)
        except FileExistsError:
            continue  # another driver claimed it since the glob: the next n
        except OSError:  # a file system without hard links: a rename (the same-second race is then possible)
            if target.exists():
                continue
            os.replace(partial, target)
            break
        partial.unlink()
        break
    return Backup(target, now.replace(microsecond=0), reason)


def _rotate(store: Path, keep: int, suffix: str) -> None:
    """Delete the backups beyond the newest ``keep``, and partial copies a killed driver left."""
    from gaca.tracking.postgres import COUNTS_SUFFIX

    for old in backups(store, suffix)[keep:]:
        old.path.unlink(missing_ok=True)
        old.path.with_name(old.path.name + COUNTS_SUFFIX).unlink(missing_ok=True)
    for stale in backup_folder(store).glob(f"*{suffix}.partial"):
        # Left by a driver killed mid-copy (SIGKILL: no cleanup ran). A copy in progress keeps writing,
        # so a partial file untouched this long is nobody's.
        try:
            if time.time() - stale.stat().st_mtime > STALE_PARTIAL_S:
                stale.unlink()
        except FileNotFoundError:
            pass


def backup_store(store: Path, reason: str, keep: int = KEEP) -> Backup | None:
    """A consistent copy of the SQLite file ``store`` (None when it does not exist yet), then rotation."""
    if not store.is_file():
        return None
    now = datetime.now(timezone.utc)
    partial = _partial(store, SQLITE_SUFFIX)
    try:
        source = sqlite3.connect(f"file:{quoted_path(store)}?mode=ro", uri=True, timeout=60)
        try:
            copy = sqlite3.connect(partial)
            try:
                source.backup(copy)
            finally:
                copy.close()
        finally:
            source.close()
        taken = _place(partial, store, reason, SQLITE_SUFFIX, now)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _rotate(store, keep, SQLITE_SUFFIX)
    return taken


def database_anchor(uri: str) -> Path:
    """Where backups of the PostgreSQL store ``uri`` are named from: ``<working folder>/<database>_<host>_<port>``."""
    from gaca.tracking.postgres import backup_stem

    return Path.cwd() / backup_stem(uri)


def backup_database(uri: str, reason: str, keep: int = KEEP) -> Backup:
    """A ``pg_dump`` of the PostgreSQL store ``uri`` (one snapshot), then rotation."""
    from gaca.tracking.postgres import BACKUP_SUFFIX, dump, write_counts

    anchor = database_anchor(uri)
    now = datetime.now(timezone.utc)
    partial = _partial(anchor, BACKUP_SUFFIX)
    try:
        counts = dump(uri, partial)
        taken = _place(partial, anchor, reason, BACKUP_SUFFIX, now)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    write_counts(taken.path, counts)  # read as "no counts" in the moment before it exists
    _rotate(anchor, keep, BACKUP_SUFFIX)
    return taken


def quoted_path(path: Path) -> str:
    from urllib.parse import quote

    return quote(str(path.absolute()))


def run_counts(path: Path) -> dict[str, int]:
    """MLflow status -> runs (not deleted) in the SQLite store file ``path``; empty when unreadable."""
    try:
        connection = sqlite3.connect(f"file:{quoted_path(path)}?mode=ro", uri=True, timeout=60)
        try:
            rows = connection.execute(
                "SELECT status, COUNT(*) FROM runs WHERE lifecycle_stage = 'active' GROUP BY status"
            ).fetchall()
        finally:
            connection.close()
    except sqlite3.Error:
        return {}
    return dict(rows)


def recovery_hint(store: Path) -> str:
    """What to do about a damaged ``store``: restore its newest backup, or start a new store."""
    found = backups(store)
    if not found:
        return (
            f"no backup of it exists ({backup_folder(store)} is empty); move it aside to start a new store, "
            "or recover what SQLite can read with `sqlite3 FILE .recover`"
        )
    finished = run_counts(found[0].path).get("FINISHED", 0)
    return (
        f"restore the newest backup, {found[0].path} ({found[0].taken:%Y-%m-%d %H:%M} UTC, {finished} finished runs), "
        "with `gaca backup restore`; a sweep then reruns the runs logged after it"
    )


def hold_in_use(store: Path) -> None:
    """Hold, until this process ends, a shared lock saying that it writes to ``store``."""
    folder = backup_folder(store)
    if folder in _held:
        return
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY)
    fcntl.flock(handle, fcntl.LOCK_SH)
    _held[folder] = handle
