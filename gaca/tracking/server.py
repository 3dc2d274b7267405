"""``gaca mlflow``: a real ``mlflow server`` on the project's store, bound to 127.0.0.1, for the UI.

The store (``mlflow.db`` in the working folder unless ``--store`` says otherwise, e.g. a PostgreSQL
database, ``postgresql://user:password@host:port/db``) is looked at first: a store that cannot be used
(an unknown scheme, a database that does not answer, refuses the password or holds another schema) is
one line and exit status 2. Then the store and the ``gaca`` experiment are created, by this one process,
before the server's workers open them; a PostgreSQL store is backed up (``pg_dump``) before it is
served. The database's password reaches the server through libpq's ``PGPASSWORD``, never its command line.
On a cluster, run it where the jobs can reach it (``--host 0.0.0.0`` and ``--allowed-hosts``;
sweeps/README.md, "The MLflow store and server") and give the jobs
``MLFLOW_TRACKING_URI=http://HOST:PORT``. Anything after ``--`` goes to ``mlflow server`` unchanged.

Bound to any address but loopback, the server requires authentication (MLflow's ``basic-auth``
app, ``gaca.tracking.auth``); ``--auth`` turns it on for loopback too. The password is never printed:
it is in the credentials file that only the user can read.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shutil
import socket
import sys
from pathlib import Path

from gaca.tracking.auth import APP_NAME, CREDENTIALS, AuthProblem, auth_folder, ensure_auth, server_environment
from gaca.tracking.secrets import redact_uri
from gaca.tracking.store import DEFAULT_STORE, StoreUnavailable, check_store, prepare_store, sqlite_path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5000
ARTIFACTS = "mlartifacts"
"""Artifacts of experiments created through the server (proxied uploads), in the working folder."""


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    passed_on: list[str] = []
    if "--" in argv:
        argv, passed_on = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    parser = argparse.ArgumentParser(
        prog="gaca mlflow",
        description="Serve the project's MLflow store with a real `mlflow server` (UI and tracking API); "
        "arguments after -- go to `mlflow server`.",
    )
    parser.add_argument("--store", help=f"backend store URI (default: sqlite:///{DEFAULT_STORE} in the working folder)")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--workers", type=int, default=2, help="server worker processes")
    parser.add_argument("--experiment", default="gaca", help="experiment created with the store")
    parser.add_argument(
        "--auth", action="store_true", help="require authentication on loopback too (always on for any other address)"
    )
    return parser.parse_args(argv), passed_on


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only listens on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def app_name(extra: list[str]) -> str | None:
    """The ``--app-name`` passed on to ``mlflow server`` after ``--``, if any."""
    for i, arg in enumerate(extra):
        if arg == "--app-name" and i + 1 < len(extra):
            return extra[i + 1]
        if arg.startswith("--app-name="):
            return arg.split("=", 1)[1]
    return None


def reachable_host(host: str) -> str:
    """The name jobs use for a server bound to ``host`` (a wildcard address means this machine's name)."""
    return socket.gethostname() if host in ("0.0.0.0", "::", "") else host


def server_command(store: str, host: str, port: int, workers: int, extra: list[str]) -> list[str]:
    mlflow = shutil.which("mlflow", path=os.path.dirname(sys.executable)) or shutil.which("mlflow") or "mlflow"
    return [
        mlflow,
        "server",
        "--backend-store-uri",
        store,
        "--registry-store-uri",
        store,  # the same store, said explicitly (mlflow prints a line otherwise)
        "--artifacts-destination",
        str(Path(ARTIFACTS).resolve()),
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        *extra,
    ]


def main(argv: list[str]) -> int:
    args, extra = parse(argv)
    store = args.store or f"sqlite:///{Path.cwd() / DEFAULT_STORE}"
    chosen_app = app_name(extra)
    auth = args.auth or not is_loopback(args.host) or chosen_app == APP_NAME
    if auth and chosen_app not in (None, APP_NAME):
        print(
            f"gaca mlflow: --host {args.host} is reachable from other machines, so the server needs "
            f"authentication (--app-name {APP_NAME}), not --app-name {chosen_app}",
            file=sys.stderr,
        )
        return 2
    from gaca.tracking.postgres import hide_password, is_postgres

    if is_postgres(store):
        store = hide_password(store)
    path = sqlite_path(store)
    try:
        check_store(store, writes=False)
    except StoreUnavailable as error:
        print(f"gaca mlflow: {error}", file=sys.stderr)
        return 1 if path is not None and path.exists() else 2  # a damaged SQLite file, or a wrong --store
    try:
        auth_files = ensure_auth(auth_folder(path)) if auth else None
    except AuthProblem as error:
        print(f"gaca mlflow: {error}", file=sys.stderr)
        return 1
    prepare_store(store, args.experiment)
    if is_postgres(store):
        from gaca.tracking.backup import backup_database

        taken = backup_database(store, "server-start")
        print(f"gaca mlflow: backup of the store: {taken.path} (gaca backup list)", file=sys.stderr)
    if auth_files is not None:
        extra = [*extra, "--app-name", APP_NAME] if chosen_app is None else extra
        os.environ.update(server_environment(*auth_files))
    command = server_command(store, args.host, args.port, args.workers, extra)
    url = f"http://{reachable_host(args.host)}:{args.port}"
    print(
        f"gaca mlflow: serving {redact_uri(store)} at http://{args.host}:{args.port} (UI and tracking API)",
        file=sys.stderr,
    )
    if auth_files is not None:
        credentials, config = auth_files
        print(
            f"gaca mlflow: basic authentication on; user {credentials.username}, password in "
            f"{config.parent / CREDENTIALS} (only you can read it)",
            file=sys.stderr,
        )
        print(
            f"gaca mlflow: for jobs: set -a; . {config.parent / CREDENTIALS}; set +a; export MLFLOW_TRACKING_URI={url}",
            file=sys.stderr,
        )
    else:
        print(f"gaca mlflow: for jobs, export MLFLOW_TRACKING_URI={url}", file=sys.stderr)
    sys.stderr.flush()
    # Starlette's deprecation of the WSGI middleware that mlflow's server imports says nothing to a user.
    os.environ.setdefault("PYTHONWARNINGS", "ignore:starlette.middleware.wsgi is deprecated")
    os.execv(command[0], command)  # the server replaces this process: signals reach it directly
