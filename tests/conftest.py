"""Gate for tests marked `slurm` (the cluster of `scripts/local-slurm.sh start`), `postgres`
(`scripts/local-postgres.sh start`) or `latex` (`scripts/install-latex.sh`), wherever they live.

Off CI a missing service skips them with the reason; with CI=true it fails them, so that a CI run
whose setup broke cannot go green by skipping.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

START_HINT = "start it with `sudo bash scripts/local-slurm.sh start`"

# A suite started as a background job of a non-interactive shell (`cmd &`, nohup) inherits SIGINT
# ignored, and so would every process it starts: the tests that stop drivers and jobs with SIGINT
# (Ctrl-C, submitit's local cancel) would then wait on processes that never stop. Python's own
# handler is reset to the default at exec, so the processes started from here get Ctrl-C back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@functools.cache
def cluster_problem() -> str | None:
    """Why the local SLURM cluster cannot run submitit jobs, or None when it can."""
    if shutil.which("sinfo") is None:
        return f"SLURM is not installed (no `sinfo` on PATH); {START_HINT}"
    try:
        sinfo = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return f"`sinfo` timed out: slurmctld is not answering; {START_HINT}"
    if sinfo.returncode != 0:
        return f"`sinfo` failed ({sinfo.stderr.strip()}); {START_HINT}"
    if not {"idle", "mix", "alloc"} & set(sinfo.stdout.split()):
        return f"no SLURM node is up (node states: {sinfo.stdout.split()}); {START_HINT}"
    # submitit reads job states through sacct; without slurmdbd every state is UNKNOWN.
    sacct = subprocess.run(["sacct", "-n", "-X", "--starttime=now-1hour"], capture_output=True, text=True, timeout=15)
    if sacct.returncode != 0:
        return f"`sacct` failed ({sacct.stderr.strip()}): accounting is not running; {START_HINT}"
    return None


POSTGRES_URL_FILE = Path("/var/lib/gaca-local-postgres/url")
"""Where `scripts/local-postgres.sh start` writes the URL of its database (with the password, root-only)."""


def postgres_url() -> str | None:
    """``GACA_POSTGRES_URL``, else the local server's URL file: a role that may create databases."""
    if os.environ.get("GACA_POSTGRES_URL"):
        return os.environ["GACA_POSTGRES_URL"]
    try:
        return POSTGRES_URL_FILE.read_text().strip() or None
    except OSError:
        return None


@functools.cache
def postgres_problem() -> str | None:
    """Why no PostgreSQL server can hold test databases here, or None."""
    url = postgres_url()
    if url is None:
        return (
            f"no PostgreSQL URL (GACA_POSTGRES_URL, or {POSTGRES_URL_FILE}); "
            "start one with `bash scripts/local-postgres.sh start`"
        )
    from gaca.tracking.postgres import DatabaseProblem, connect

    try:
        connect(url).close()
    except DatabaseProblem as error:
        return f"{error}; start it with `bash scripts/local-postgres.sh start`"
    return None


def latex_problem() -> str | None:
    """Why LaTeX reports cannot compile here, or None."""
    if shutil.which("latexmk") is None or shutil.which("pdflatex") is None:
        return "latexmk/pdflatex not installed; run `bash scripts/install-latex.sh`"
    return None


CI_MODULES = ("verl", "alfworld", "textworld")
"""Extras CI installs; their tests skip where they are missing (pytest.importorskip), so under
CI=true a missing one stops the session instead of going green by skipping."""


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("CI") != "true":
        return
    missing = [name for name in CI_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise pytest.UsageError(
            f"CI=true but {missing} cannot be imported; `bash scripts/setup.sh dev verl alfworld` installs them"
        )


# marker -> the check that says why its tests cannot run here (None: they can).
REQUIREMENTS = {"slurm": cluster_problem, "postgres": postgres_problem, "latex": latex_problem}


@pytest.fixture(autouse=True)
def _require_services(request: pytest.FixtureRequest) -> None:
    """Tests marked ``slurm``, ``postgres`` or ``latex`` skip where the service is missing, but fail under
    CI=true (CI installs and starts them, so a silent skip there would hide a broken setup)."""
    for marker, check in REQUIREMENTS.items():
        if request.node.get_closest_marker(marker) is None:
            continue
        problem = check()
        if problem is None:
            continue
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {marker} is not usable: {problem}", pytrace=False)
        pytest.skip(problem)


SHARED_SERVICES = ("slurm", "postgres")
"""Markers whose tests share one service (the one-node cluster, the one database server, which some of
them restart): under pytest-xdist (`-n 2 --dist loadgroup`, scripts/test.sh) each runs in one worker,
one test after another, while the other worker takes the rest."""


def service_group(item: pytest.Item) -> str | None:
    """The first of SHARED_SERVICES that ``item`` is marked with: the one worker group it runs in."""
    return next((marker for marker in SHARED_SERVICES if item.get_closest_marker(marker) is not None), None)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook turns the mark into the node id's @group
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = service_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup` the scheduler groups tests by the `@group` suffix of their node ids; a
    pytest whose node ids no longer carry it (pytest 9 with pytest-xdist 3.8) would spread the SLURM and
    database tests over both workers without a word, so such a pairing stops the run before any test (xdist
    reports it as an INTERNALERROR naming the first test that lost its group)."""
    if not hasattr(session.config, "workerinput") or not session.config.getoption("loadgroup", default=False):
        return  # only an xdist worker's collection is scheduled by group
    for item in session.items:
        group = service_group(item)
        if group is not None and not item.nodeid.endswith(f"@{group}"):
            raise pytest.UsageError(
                f"--dist loadgroup: {item.nodeid} lost its @{group} group (pytest {pytest.__version__}); "
                "install the pytest range pyproject.toml's dev extra names"
            )
