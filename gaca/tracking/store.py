"""The MLflow store: where it is, whether it is usable (a server that answers and accepts the
credentials; an SQLite file that is intact and writable; a PostgreSQL database that answers, accepts
the credentials and holds MLflow's schema, ``gaca.tracking.postgres``), and creating it under a lock
between processes before anything logs."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

DEFAULT_STORE = "mlflow.db"
CONNECT_TIMEOUT_S = 5.0
"""How long the up-front look at a tracking server waits (MLflow's own client retries for minutes)."""
SERVER_PROBES = ("health", "api/2.0/mlflow/experiments/search?max_results=1")
"""What an MLflow server answers (the second also behind proxies that do not pass /health on)."""
STORE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https", "file", "databricks")
"""URI schemes MLflow has a store for (a driver may follow a ``+``: ``postgresql+psycopg2``)."""
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
    from gaca.tracking.postgres import hide_password, is_postgres
    from gaca.tracking.secrets import MASK, split_userinfo

    configured = configured_tracking_uri(uri)
    if is_postgres(configured):  # the user stays in the URI, the password goes to libpq's PGPASSWORD
        return hide_password(configured)
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


class StoreUnavailable(RuntimeError):
    """The tracking store cannot be used: a server that does not answer or refuses the credentials,
    a damaged SQLite file, a folder that cannot be written."""


def check_integrity(path: Path) -> None:
    """``PRAGMA quick_check`` of the SQLite file ``path`` (linear in its size, no index cross-check:
    tens of milliseconds for a study's store); ``StoreUnavailable`` naming the file, the newest
    backup and how to recover when it is damaged.

    Opened read-write where the file allows it, so that a hot journal left by a writer that was
    killed mid-commit is rolled back (as the next writer would) instead of reading as damage.
    """
    import sqlite3
    from urllib.parse import quote

    problem = None
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=rw", uri=True, timeout=60)
        try:
            rows = [row[0] for row in connection.execute("PRAGMA quick_check").fetchall()]
        finally:
            connection.close()
        if rows != ["ok"]:
            problem = "; ".join(rows[:2]) + (f" (and {len(rows) - 2} more)" if len(rows) > 2 else "")
    except sqlite3.Error as error:
        problem = str(error)
    if problem is None:
        return
    from gaca.tracking.backup import recovery_hint

    raise StoreUnavailable(f"the MLflow store {path.absolute()} is damaged ({problem}); {recovery_hint(path)}")


def check_store(uri: str, writes: bool = True) -> None:
    """Look at the store once, before any work: a server must answer within ``CONNECT_TIMEOUT_S`` and
    accept this process's credentials (``check_credentials``); an SQLite file must pass
    ``check_integrity``, and it (or its folder, when it is still to be created) be writable when ``writes``.

    Raises ``StoreUnavailable`` with one line that names the store (password masked) and what to do.
    """
    from gaca.tracking.postgres import DatabaseProblem, is_postgres
    from gaca.tracking.postgres import check as check_database
    from gaca.tracking.secrets import redact_uri, split_userinfo

    shown = redact_uri(uri)
    check_scheme(uri)
    if is_postgres(uri):
        try:
            check_database(uri)
        except DatabaseProblem as error:
            raise StoreUnavailable(str(error)) from None
        return
    if uri.startswith(("http://", "https://")):
        bare = split_userinfo(uri)[0].rstrip("/")
        answers: list[int | str] = []
        for probe in SERVER_PROBES:  # the next probe only after an answer that is not MLflow's
            answers.append(_http_status(f"{bare}/{probe}"))
            if isinstance(answers[-1], str) or answers[-1] < 300 or answers[-1] in (401, 403):
                break
        silence = next((answer for answer in answers if isinstance(answer, str)), None)
        if silence is not None:
            raise StoreUnavailable(
                f"the MLflow tracking server at {shown} does not answer ({silence}); start it "
                "(gaca mlflow) or point MLFLOW_TRACKING_URI (or tracking.uri) at a running one"
            )
        statuses = [answer for answer in answers if isinstance(answer, int)]  # all of them: none was silence
        if not any(status < 300 or status in (401, 403) for status in statuses):
            raise StoreUnavailable(
                f"{shown} answers, but not as an MLflow tracking server (HTTP {answers} for {list(SERVER_PROBES)}); "
                "check MLFLOW_TRACKING_URI (or tracking.uri)"
            )
        check_credentials(uri)
        return
    path = sqlite_path(uri)
    if path is not None and path.is_file():
        check_integrity(path)
    if path is None or not writes:
        return
    problem = unwritable(path)
    if problem:
        raise StoreUnavailable(
            f"the MLflow store {shown} cannot be written ({problem}); run from a writable folder "
            "or set MLFLOW_TRACKING_URI=sqlite:////a/writable/folder/mlflow.db"
        )


def check_scheme(uri: str) -> None:
    """``StoreUnavailable`` for a URI whose scheme no MLflow store has (``postgres://``, ``postgressql://``),
    naming the closest known one; MLflow itself would say so only deep in a traceback, or never
    (its engine retries a database it cannot open for an hour)."""
    import difflib

    from gaca.tracking.secrets import redact_uri

    if "://" not in uri:
        return
    scheme = uri.split("://", 1)[0]
    if scheme.split("+", 1)[0].lower() in STORE_SCHEMES:
        return
    close = difflib.get_close_matches(scheme.lower(), STORE_SCHEMES, n=1, cutoff=0.5)
    guess = f"did you mean {close[0]}://? " if close else ""
    raise StoreUnavailable(
        f"the tracking URI {redact_uri(uri)} has the scheme {scheme!r}, which no MLflow store has; "
        f"{guess}(known: {', '.join(STORE_SCHEMES)})"
    )


def check_credentials(uri: str) -> None:
    """``StoreUnavailable`` when the server at ``uri`` refuses this process's credentials (the URI's
    user-info, else ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``) or needs some."""
    from gaca.tracking.auth import PASSWORD_VARIABLE, USER_VARIABLE, Credentials, client_credentials
    from gaca.tracking.secrets import MASK, redact_uri, split_userinfo

    bare, user, password = split_userinfo(uri)
    given = (
        Credentials(unquote(user or ""), unquote(password)) if password not in (None, MASK) else client_credentials()
    )
    status = _http_status(f"{bare.rstrip('/')}/{SERVER_PROBES[1]}", given)
    if status != 401:
        return
    shown = redact_uri(uri)
    if given is None:
        raise StoreUnavailable(
            f"the MLflow server at {shown} requires authentication; set {USER_VARIABLE} and {PASSWORD_VARIABLE} "
            "(`gaca mlflow` keeps them in mlflow-auth/credentials: set -a; . mlflow-auth/credentials; set +a)"
        )
    raise StoreUnavailable(
        f"the MLflow server at {shown} refused user {given.username!r}: wrong user name or password "
        f"(check {USER_VARIABLE} and {PASSWORD_VARIABLE} against the server's mlflow-auth/credentials)"
    )


def _http_status(url: str, credentials=None) -> int | str:
    """The HTTP status of a GET of ``url`` (with HTTP basic ``credentials``, a ``gaca.tracking.auth.Credentials``),
    or why nothing answered (within ``CONNECT_TIMEOUT_S``)."""
    import base64
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url)
    if credentials is not None:
        token = base64.b64encode(f"{credentials.username}:{credentials.password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except TimeoutError:
        return f"no answer within {CONNECT_TIMEOUT_S:.0f} s"
    except (OSError, ValueError) as error:
        return str(getattr(error, "reason", error))


def unwritable(path: Path) -> str | None:
    """Why ``path`` (a file or folder, existing or to be created) cannot be written, or None."""
    path = path.absolute()
    folder = path if path.is_dir() else path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is read-only"
    if path.is_file() and not os.access(path, os.W_OK):
        return f"{path} is read-only"
    return None


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Hold the store's inter-process lock (SQLite's lock file, PostgreSQL's advisory lock; a server
    serialises its own clients).

    Alembic's migrations of a fresh SQLite file are not safe against each other: eight processes
    creating one at once all fail and leave it half-migrated (docs/dependencies.md). The OS drops the
    lock when its holder dies, however it dies. The holder deletes the lock file before releasing it, so
    none is left behind; a process that locked a file deleted meanwhile locks the new one instead.
    """
    from gaca.tracking.postgres import creation_lock, is_postgres

    if is_postgres(uri):
        with creation_lock(uri):
            yield
        return
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + LOCK_SUFFIX)
    while True:
        handle = open(lock, "a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.fstat(handle.fileno()).st_ino == os.stat(lock).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()  # its holder deleted it after we opened it: lock the current one
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        handle.close()


CREATING_SUFFIX = ".creating"


def create_atomically(uri: str) -> None:
    """A fresh SQLite store's schema, built in ``<file>.creating`` and renamed into place: a process
    killed while MLflow migrates it (tens of statements, not one transaction) leaves no half-made
    store for the next one to trip on. Call under ``store_lock``."""
    from mlflow.tracking import MlflowClient

    path = sqlite_path(uri)
    if path is None or path.exists():
        return
    fresh = path.with_name(path.name + CREATING_SUFFIX)
    fresh.unlink(missing_ok=True)
    MlflowClient(tracking_uri=f"sqlite:///{fresh.absolute()}").search_experiments(max_results=1)  # migrates
    os.replace(fresh, path)


def prepare_store(uri: str, experiment: str) -> str:
    """Create the store's schema and the experiment if needed; return the experiment id.

    Every process that opens a store calls this first. The first MLflow call of a process builds
    (and on a fresh SQLite file creates and migrates) the store, so it runs under ``store_lock``;
    later calls in the process reuse MLflow's cached store.
    """
    from mlflow.tracking import MlflowClient

    with store_lock(uri):
        create_atomically(uri)
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
