"""A PostgreSQL store behind the MLflow server: the look before any work (it answers, accepts the
credentials, holds MLflow's schema at this MLflow's revision or nothing yet), the lock under which one
process creates the schema, and backups with ``pg_dump`` / restores with ``pg_restore``.

The password never travels in a URI that a process list, a log or a job's config shows: it moves to
libpq's own ``PGPASSWORD`` (read by the driver, ``pg_dump`` and the server's workers alike), and the URI
keeps only the user. ``~/.pgpass`` and a ``PGPASSWORD`` set by the user work as libpq documents.
The driver is psycopg 3, the one SQLAlchemy 2.1 (and so MLflow's store) uses for ``postgresql://``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

SCHEMES = ("postgresql", "postgresql+psycopg", "postgresql+psycopg2")
"""The SQLAlchemy URL schemes of PostgreSQL that MLflow's store accepts (``postgres://`` is not one)."""
PASSWORD_VARIABLE = "PGPASSWORD"
CONNECT_TIMEOUT_S = 5
"""libpq's ``connect_timeout`` for the look before any work (MLflow's own engine retries for an hour)."""
LOCK_ID = 0x67616361
"""The advisory lock (``pg_advisory_lock``) held while a process creates the schema and the experiment."""
MIGRATIONS_TABLE = "alembic_version"
"""Where MLflow's migrations record the schema's revision."""
BACKUP_SUFFIX = ".dump"
"""``pg_dump --format=custom`` files in ``mlflow-backups/``."""


class DatabaseProblem(RuntimeError):
    """One line that names the store (password masked) and what is wrong with it."""


def is_postgres(uri: str) -> bool:
    return uri.split("://", 1)[0] in SCHEMES


def split_password(uri: str) -> tuple[str, str | None]:
    """(``uri`` without its password, keeping the user; the password or None)."""
    from gaca.tracking.secrets import MASK, split_userinfo

    bare, user, password = split_userinfo(uri)
    if user is None:
        return uri, None
    scheme, rest = bare.split("://", 1)
    without = f"{scheme}://{user}@{rest}" if user else bare
    return without, None if password in (None, "", MASK) else unquote(password)


def hide_password(uri: str) -> str:
    """``uri`` without its password, which moves to ``PGPASSWORD`` (inherited by every process started
    from here: the server's workers, ``pg_dump``, a sweep's jobs)."""
    without, password = split_password(uri)
    if password is not None:
        os.environ[PASSWORD_VARIABLE] = password
    return without


def libpq_url(uri: str) -> str:
    """The URI as libpq reads it (no SQLAlchemy driver suffix, no password)."""
    return "postgresql://" + split_password(uri)[0].split("://", 1)[1]


def database_name(uri: str) -> str:
    return unquote(urlsplit(libpq_url(uri)).path.lstrip("/")) or "postgres"


def connect(uri: str, autocommit: bool = True) -> Any:
    """A psycopg connection to the store of ``uri``; ``DatabaseProblem`` in one line."""
    try:
        import psycopg
    except ImportError:
        raise DatabaseProblem(f"{shown(uri)} needs the PostgreSQL driver: pip install 'gaca[postgres]'") from None
    password = split_password(uri)[1]
    extra: dict[str, Any] = {"password": password} if password is not None else {}
    try:
        return psycopg.connect(libpq_url(uri), connect_timeout=CONNECT_TIMEOUT_S, autocommit=autocommit, **extra)
    except psycopg.OperationalError as error:
        raise DatabaseProblem(describe(uri, str(error))) from None


def shown(uri: str) -> str:
    """``the PostgreSQL store postgresql://user:***@host:port/db`` (the user shown, the password never)."""
    from gaca.tracking.secrets import MASK, split_userinfo

    bare, user, password = split_userinfo(uri)
    if user:
        scheme, rest = bare.split("://", 1)
        bare = f"{scheme}://{user}{':' + MASK if password is not None else ''}@{rest}"
    return f"the PostgreSQL store {bare}"


def describe(uri: str, message: str) -> str:
    """libpq's error as one line that says what to check."""
    first = " ".join(message.split())
    where = urlsplit(libpq_url(uri))
    host = f"{where.hostname or 'localhost'}:{where.port or 5432}"
    if "password authentication failed" in first or "no password supplied" in first:
        hint = "wrong user name or password (the URL's, or PGPASSWORD / ~/.pgpass)"
    elif "could not translate host name" in first or "failed to resolve host" in first:
        hint = f"the host {where.hostname!r} is unknown; check the URL's host"
    elif "does not exist" in first and "database" in first:
        hint = f"the server at {host} has no database {database_name(uri)!r}; create it (createdb) or fix the URL"
    elif "timeout expired" in first:
        hint = f"nothing answered at {host} within {CONNECT_TIMEOUT_S} s; check the host and port, and the server"
    elif "Connection refused" in first or "No such file or directory" in first:
        hint = f"nothing listens at {host}; start PostgreSQL (bash scripts/local-postgres.sh start) or fix the port"
    else:
        hint = "check the URL and that the server runs"
    return f"{shown(uri)} cannot be used: {hint} ({first})"


def latest_revision() -> str:
    """The schema revision this MLflow writes (its own alembic head, read from its migrations)."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    return _get_latest_schema_revision()


@dataclass(frozen=True)
class Schema:
    tables: int
    """Tables in the ``public`` schema."""
    revision: str | None
    """MLflow's schema revision, None when the database has no ``alembic_version``."""


def schema(connection: Any) -> Schema:
    tables = connection.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
    ).fetchone()[0]
    if connection.execute("SELECT to_regclass(%s)", (f"public.{MIGRATIONS_TABLE}",)).fetchone()[0] is None:
        return Schema(tables, None)
    row = connection.execute(f"SELECT version_num FROM {MIGRATIONS_TABLE}").fetchone()
    return Schema(tables, row[0] if row else None)


def check(uri: str) -> None:
    """``DatabaseProblem`` unless the store answers, accepts the credentials and holds MLflow's schema at
    this MLflow's revision, or no table at all (the first ``prepare_store`` creates the schema)."""
    connection = connect(uri)
    try:
        found = schema(connection)
    finally:
        connection.close()
    if found.tables == 0:
        return
    if found.revision is None:
        raise DatabaseProblem(
            f"{shown(uri)} holds {found.tables} tables but no MLflow schema (no {MIGRATIONS_TABLE} table); "
            "point the URL at an empty database (createdb) or at an MLflow one"
        )
    head = latest_revision()
    if found.revision != head:
        raise DatabaseProblem(
            f"{shown(uri)} holds MLflow's schema at revision {found.revision}, this MLflow writes {head}; "
            "back it up (gaca backup now), then run `mlflow db upgrade URL` with this MLflow"
        )


@contextmanager
def creation_lock(uri: str) -> Iterator[None]:
    """Hold the store's advisory lock: one process at a time creates the schema and the experiment."""
    connection = connect(uri)
    try:
        connection.execute("SELECT pg_advisory_lock(%s)", (LOCK_ID,))
        yield
    finally:
        connection.close()  # the session's advisory locks go with it


def tool_environment(uri: str) -> dict[str, str]:
    """The environment of ``pg_dump`` / ``pg_restore``: the password through ``PGPASSWORD``, never argv."""
    env = dict(os.environ)
    password = split_password(uri)[1]
    if password is not None:
        env[PASSWORD_VARIABLE] = password
    env["PGCONNECT_TIMEOUT"] = str(CONNECT_TIMEOUT_S)
    return env


def run_counts(connection: Any) -> dict[str, int]:
    """MLflow status -> runs (not deleted), as ``gaca backup list`` shows them."""
    rows = connection.execute("SELECT status, COUNT(*) FROM runs WHERE lifecycle_stage = 'active' GROUP BY status")
    return dict(rows.fetchall())


def dump(uri: str, target: Path) -> dict[str, int]:
    """``pg_dump --format=custom`` of the store into ``target``; the run counts of the very state dumped
    (counted in the transaction whose snapshot ``pg_dump`` reads)."""
    import psycopg

    connection = connect(uri, autocommit=False)
    try:
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        connection.read_only = True
        snapshot = connection.execute("SELECT pg_export_snapshot()").fetchone()[0]
        counts = run_counts(connection) if schema(connection).revision else {}
        command = ["pg_dump", "--format=custom", "--no-owner", "--no-privileges", f"--snapshot={snapshot}"]
        done = subprocess.run(
            [*command, "--file", str(target), "--dbname", libpq_url(uri)],
            env=tool_environment(uri),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise DatabaseProblem(f"pg_dump of {shown(uri)} failed: {' '.join(done.stderr.split())}")
    finally:
        connection.rollback()
        connection.close()
    return counts


COUNTS_SUFFIX = ".runs"
"""``<backup>.runs`` beside a dump: ``STATUS COUNT`` lines of the state it holds (a dump cannot be read
without restoring it)."""


def write_counts(target: Path, counts: dict[str, int]) -> None:
    target.with_name(target.name + COUNTS_SUFFIX).write_text("".join(f"{k} {v}\n" for k, v in sorted(counts.items())))


def read_counts(target: Path) -> dict[str, int]:
    try:
        text = target.with_name(target.name + COUNTS_SUFFIX).read_text()
    except OSError:
        return {}
    return {status: int(n) for status, n in (line.split() for line in text.splitlines() if line.strip())}


def other_connections(uri: str) -> int:
    """Sessions on the store's database besides this one (a server's workers, jobs, a psql)."""
    connection = connect(uri)
    try:
        return connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    finally:
        connection.close()


def restore_dump(uri: str, source: Path) -> None:
    """Replace the store's objects by those of the dump ``source`` (one transaction: all or nothing)."""
    command = ["pg_restore", "--clean", "--if-exists", "--no-owner", "--no-privileges", "--single-transaction"]
    done = subprocess.run(
        [*command, "--dbname", libpq_url(uri), str(source)], env=tool_environment(uri), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise DatabaseProblem(f"pg_restore of {source.name} into {shown(uri)} failed: {' '.join(done.stderr.split())}")


def backup_stem(uri: str) -> str:
    """The name backups of the store start with: its database, host and port (one folder may hold several)."""
    where = urlsplit(libpq_url(uri))
    return re.sub(r"\W+", "_", f"{database_name(uri)}_{where.hostname or 'localhost'}_{where.port or 5432}")


@contextmanager
def scratch_database(uri: str, prefix: str) -> Iterator[str]:
    """A new, empty database on the server of ``uri`` (whose role may create databases), named
    ``<prefix>_<random>``, dropped afterwards with every connection to it; yields its URI."""
    import secrets

    name = f"{prefix}_{secrets.token_hex(4)}"
    without, password = split_password(uri)
    scheme, rest = without.split("://", 1)
    place = rest.split("/", 1)[0]
    scratch = f"{scheme}://{place}/{name}"
    if password is not None:
        user, host = place.rsplit("@", 1)
        scratch = f"{scheme}://{user}:{quote(password, safe='')}@{host}/{name}"
    with connect(uri) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield scratch
    finally:
        drop_database(uri, name)


DROP_PATIENCE_S = 60.0
"""How long ``drop_database`` waits for sessions it may not end to leave."""


def drop_database(uri: str, name: str) -> None:
    """``DROP DATABASE name`` on the server of ``uri``, ending this role's sessions on it. A session of
    another role (an autovacuum worker that started on the new tables, say) cannot be ended by a role
    without pg_signal_backend (``WITH (FORCE)`` then fails): the plain DROP stops autovacuum itself, and
    another session is waited for, up to ``DROP_PATIENCE_S``."""
    import time

    import psycopg

    deadline = time.monotonic() + DROP_PATIENCE_S
    while True:
        with connect(uri) as admin:  # a new session: the server may have restarted meanwhile
            try:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except psycopg.errors.InsufficientPrivilege:
                pass
            try:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
                return
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
        time.sleep(1.0)
