"""``gaca mlflow``: a real ``mlflow server`` on the project's store, bound to 127.0.0.1, for the UI.

The store (``mlflow.db`` in the working folder unless ``--store`` says otherwise) and the ``gaca``
experiment are created first, by this one process, before the server's workers open them.
On a cluster, run it where the jobs can reach it (``--host 0.0.0.0`` and ``--allowed-hosts``;
sweeps/README.md, "The MLflow store and server") and give the jobs
``MLFLOW_TRACKING_URI=http://HOST:PORT``. Anything after ``--`` goes to ``mlflow server`` unchanged.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from gaca.tracking.secrets import redact_uri
from gaca.tracking.store import DEFAULT_STORE, prepare_store

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
    return parser.parse_args(argv), passed_on


def server_command(store: str, host: str, port: int, workers: int, extra: list[str]) -> list[str]:
    mlflow = shutil.which("mlflow", path=os.path.dirname(sys.executable)) or shutil.which("mlflow") or "mlflow"
    return [
        mlflow, "server",
        "--backend-store-uri", store,
        "--registry-store-uri", store,  # the same store, said explicitly (mlflow prints a line otherwise)
        "--artifacts-destination", str(Path(ARTIFACTS).resolve()),
        "--host", host,
        "--port", str(port),
        "--workers", str(workers),
        *extra,
    ]


def main(argv: list[str]) -> int:
    args, extra = parse(argv)
    store = args.store or f"sqlite:///{Path.cwd() / DEFAULT_STORE}"
    prepare_store(store, args.experiment)
    command = server_command(store, args.host, args.port, args.workers, extra)
    print(f"gaca mlflow: serving {redact_uri(store)} at http://{args.host}:{args.port} (UI and tracking API)", file=sys.stderr)
    print(f"gaca mlflow: for jobs, export MLFLOW_TRACKING_URI=http://{args.host}:{args.port}", file=sys.stderr)
    sys.stderr.flush()
    # Starlette's deprecation of the WSGI middleware that mlflow's server imports says nothing to a user.
    os.environ.setdefault("PYTHONWARNINGS", "ignore:starlette.middleware.wsgi is deprecated")
    os.execv(command[0], command)  # the server replaces this process: signals reach it directly
