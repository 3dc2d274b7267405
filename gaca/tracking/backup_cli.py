"""``gaca backup list`` / ``gaca backup restore [NAME]``: the backups of the SQLite store
(``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else ``mlflow.db`` here; ``gaca.tracking.backup``)."""

from __future__ import annotations

import argparse
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gaca backup", description="List or restore backups of the SQLite MLflow store."
    )
    parser.add_argument("action", choices=("list", "restore"))
    parser.add_argument("name", nargs="?", help="restore: the backup to restore (default: the newest)")
    parser.add_argument(
        "--tracking-uri", help="the store (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)"
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    from gaca.orchestration.display import table
    from gaca.tracking.backup import StoreInUse, backup_folder, backups, restore, run_counts
    from gaca.tracking.secrets import redact_uri
    from gaca.tracking.store import StoreUnavailable, resolve_tracking_uri, sqlite_path

    args = parse(argv)
    uri = resolve_tracking_uri(args.tracking_uri)
    store = sqlite_path(uri)
    if store is None:
        print(
            f"gaca backup: {redact_uri(uri)} is not an SQLite store; back up a server's store where it runs "
            "(gaca backup with MLFLOW_TRACKING_URI=sqlite:///... on that host)",
            file=sys.stderr,
        )
        return 2
    if args.action == "list":
        found = backups(store)
        if not found:
            print(f"no backup of {store.absolute()} in {backup_folder(store)}")
            return 0
        rows = []
        for backup in found:
            counts = run_counts(backup.path)
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
        print(f"backups of {store.absolute()} in {backup_folder(store)}, newest first:")
        print(table(["name", "taken (UTC)", "before", "MB", "finished runs", "runs"], rows))
        return 0
    try:
        chosen, aside = restore(store, args.name)
    except (FileNotFoundError, StoreInUse, StoreUnavailable) as error:
        print(f"gaca backup: {error}", file=sys.stderr)
        return 1
    counts = run_counts(store)
    print(f"restored {store.absolute()} from {chosen.name} ({counts.get('FINISHED', 0)} finished runs)")
    if aside is not None:
        print(f"the replaced store was moved to {aside}")
    return 0
