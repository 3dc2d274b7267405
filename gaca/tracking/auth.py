"""Basic authentication of ``gaca mlflow``: MLflow's own ``basic-auth`` app, set up once per project.

The folder ``mlflow-auth/`` (mode 0700, beside an SQLite store, else in the working folder) holds

- ``credentials``: the admin user's ``MLFLOW_TRACKING_USERNAME=`` and ``MLFLOW_TRACKING_PASSWORD=``
  lines, generated once, mode 0600; a shell reads them with ``set -a; . mlflow-auth/credentials; set +a``
  and every job inherits them (submitit's local jobs; ``sbatch`` exports the environment);
- ``basic_auth.ini``: MLflow's auth config (``MLFLOW_AUTH_CONFIG_PATH``), no password in it;
- ``basic_auth.db``: MLflow's database of users, where the admin user is created at the first start
  from ``MLFLOW_AUTH_ADMIN_PASSWORD``, which only the server's process receives;
- ``server_secret_key``: the key of the server's CSRF protection (``MLFLOW_FLASK_SERVER_SECRET_KEY``,
  the same for every worker and restart), mode 0600.
"""

from __future__ import annotations

import getpass
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

FOLDER = "mlflow-auth"
CREDENTIALS = "credentials"
CONFIG = "basic_auth.ini"
USERS_DB = "basic_auth.db"
SECRET_KEY = "server_secret_key"
APP_NAME = "basic-auth"
"""``mlflow server --app-name``: MLflow's HTTP basic authentication."""
USER_VARIABLE = "MLFLOW_TRACKING_USERNAME"
PASSWORD_VARIABLE = "MLFLOW_TRACKING_PASSWORD"
PASSWORD_BYTES = 24
"""``secrets.token_urlsafe`` bytes: 32 characters of [A-Za-z0-9_-], safe in a shell file."""
DEFAULT_PERMISSION = "READ"
"""What a user that an admin adds later may do with experiments nobody granted them (MLflow's default)."""


class AuthProblem(RuntimeError):
    """The auth folder cannot be used as it is (a credentials file others can read, a lost password)."""


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str

    def __repr__(self) -> str:  # a traceback or a debugger never shows the password
        return f"Credentials(username={self.username!r}, password='***')"


def auth_folder(store_file: Path | None) -> Path:
    """``mlflow-auth/`` beside the SQLite store file, or in the working folder for another store."""
    base = store_file.parent if store_file is not None else Path.cwd()
    return (base / FOLDER).absolute()


def _private(path: Path) -> None:
    """Raise ``AuthProblem`` unless only the owner may read ``path``."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AuthProblem(f"{path} can be read by other users (mode {stat.filemode(mode)}); chmod go= {path}")


def read_credentials(path: Path) -> Credentials:
    """The ``NAME=value`` lines of a credentials file (checked to be private)."""
    _private(path)
    values = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            name, value = line.split("=", 1)
            values[name.strip()] = value.strip()
    if not values.get(USER_VARIABLE) or not values.get(PASSWORD_VARIABLE):
        raise AuthProblem(
            f"{path} lacks {USER_VARIABLE}= or {PASSWORD_VARIABLE}=; delete the folder {path.parent} to start over"
        )
    return Credentials(values[USER_VARIABLE], values[PASSWORD_VARIABLE])


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` with mode 0600 (never more open, whatever the umask) holding ``text``."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def ensure_auth(folder: Path) -> tuple[Credentials, Path]:
    """(the admin's credentials, the auth config file) of ``folder``, created on first use.

    A users database without its credentials file (the password is lost) is an ``AuthProblem``:
    MLflow ignores a new bootstrap password once the admin user exists.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    credentials_file, config, users = folder / CREDENTIALS, folder / CONFIG, folder / USERS_DB
    if credentials_file.exists():
        credentials = read_credentials(credentials_file)
    elif users.exists():
        raise AuthProblem(
            f"{users} holds the server's users but {credentials_file} (the admin's password) is missing; "
            f"restore it, or delete {users} to create a new admin user with a new password"
        )
    else:
        credentials = Credentials(getpass.getuser(), secrets.token_urlsafe(PASSWORD_BYTES))
        text = (
            "# gaca mlflow: the MLflow server's admin user (basic authentication). Keep this file private.\n"
            "# In the shell that starts sweeps: set -a; . THIS_FILE; set +a\n"
            f"{USER_VARIABLE}={credentials.username}\n{PASSWORD_VARIABLE}={credentials.password}\n"
        )
        _write_private(credentials_file, text)
    if not (folder / SECRET_KEY).exists():
        _write_private(folder / SECRET_KEY, secrets.token_urlsafe(PASSWORD_BYTES))
    _private(folder / SECRET_KEY)
    config.write_text(
        "[mlflow]\n"
        f"default_permission = {DEFAULT_PERMISSION}\n"
        f"database_uri = sqlite:///{users}\n"
        f"admin_username = {credentials.username}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
    )
    os.chmod(config, 0o600)
    return credentials, config


def server_environment(credentials: Credentials, config: Path) -> dict[str, str]:
    """What the ``mlflow server --app-name basic-auth`` process needs: its config, its CSRF key, and the
    admin's password for creating the admin user at the first start (ignored afterwards)."""
    return {
        "MLFLOW_AUTH_CONFIG_PATH": str(config),
        "MLFLOW_AUTH_ADMIN_PASSWORD": credentials.password,
        "MLFLOW_FLASK_SERVER_SECRET_KEY": (config.parent / SECRET_KEY).read_text().strip(),
    }


def client_credentials() -> Credentials | None:
    """The credentials this process gives a tracking server (MLflow's own variables), if any."""
    user, password = os.environ.get(USER_VARIABLE), os.environ.get(PASSWORD_VARIABLE)
    return Credentials(user or "", password or "") if user or password else None
