"""``gaca backup list`` / ``gaca backup restore [NAME]`` / ``gaca backup now``: the backups of the store
(``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else ``mlflow.db`` here), an SQLite file or a
PostgreSQL database (``gaca.tracking.backup``)."""

from __future__ import annotations

import argparse
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gaca backup", description="List, restore or take backups of the MLflow store (SQLite or PostgreSQL)."
    )
    parser.add_argument("action", choices=("list", "restore", "now"))
    parser.add_argument("name", nargs="?", help="restore: the backup to restore (default: the newest)")
    parser.add_argument(
        "--tracking-uri", help="the store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)"
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    from gaca.tracking.backup import backup_database, backup_store, database_anchor, run_counts
    from gaca.tracking.postgres import BACKUP_SUFFIX, DatabaseProblem, is_postgres, read_counts, shown
    from gaca.tracking.restore import StoreInUse, restore, restore_database
    from gaca.tracking.secrets import redact_uri
    from gaca.tracking.store import StoreUnavailable, check_scheme, resolve_tracking_uri, sqlite_path

    args = parse(argv)
    uri = resolve_tracking_uri(args.tracking_uri)
    try:
        check_scheme(uri)
    except StoreUnavailable as error:
        print(f"gaca backup: {error}", file=sys.stderr)
        return 2
    database = is_postgres(uri)
    store = database_anchor(uri) if database else sqlite_path(uri)
    if store is None:
        print(
            f"gaca backup: {redact_uri(uri)} is a server; back up its store where it runs "
            "(gaca backup with MLFLOW_TRACKING_URI=sqlite:///... or postgresql://... on that host)",
            file=sys.stderr,
        )
        return 2
    described = shown(uri) if database else str(store.absolute())
    try:
        if args.action == "now":
            taken = backup_database(uri, "by-hand") if database else backup_store(store, "by-hand")
            print(f"backup of {described}: {taken.path}" if taken else f"{described} does not exist yet")
            return 0
        if args.action == "list":
            return show(store, described, BACKUP_SUFFIX if database else ".db", read_counts if database else run_counts)
        if database:
            chosen, replaced = restore_database(uri, args.name)
            counts = read_counts(chosen.path)
            print(f"restored {described} from {chosen.name} ({counts.get('FINISHED', 0)} finished runs)")
            print(f"its state before the restore is the backup {replaced.name}")
            return 0
        chosen, aside = restore(store, args.name)
    except (FileNotFoundError, StoreInUse, StoreUnavailable, DatabaseProblem) as error:
        print(f"gaca backup: {error}", file=sys.stderr)
        return 1
    counts = run_counts(store)
    print(f"restored {store.absolute()} from {chosen.name} ({counts.get('FINISHED', 0)} finished runs)")
    if aside is not None:
        print(f"the replaced store was moved to {aside}")
    return 0


def show(store, described: str, suffix: str, counted) -> int:
    """``gaca backup list``: name, time, reason, size and runs of each backup, newest first."""
    from gaca.text import table
    from gaca.tracking.backup import backup_folder, backups

    found = backups(store, suffix)
    if not found:
        print(f"no backup of {described} in {backup_folder(store)}")
        return 0
    rows = []
    for backup in found:
        counts = counted(backup.path)
        rows.append(
            [
                backup.name,
                f"{backup.taken:%Y-%m-%d %H:%M:%S}",
                backup.reason,
                f"{backup.path.stat().st_size / 1e6:.1f}",
                counts.get("FINISHED", 0),
                sum(counts.values()),
            ]
        )
    print(f"backups of {described} in {backup_folder(store)}, newest first:")
    print(table(["name", "taken (UTC)", "before", "MB", "finished runs", "runs"], rows))
    return 0
