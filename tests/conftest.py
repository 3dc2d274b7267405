"""Gate for tests marked `slurm`, wherever they live: they need the cluster that
`scripts/local-slurm.sh start` brings up.

Off CI a missing cluster skips them with the reason; with CI=true it fails them, so that a CI run
whose cluster did not come up cannot go green by skipping.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest

START_HINT = "start it with `sudo bash scripts/local-slurm.sh start`"


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


@pytest.fixture(autouse=True)
def _require_slurm_cluster(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("slurm") is None:
        return
    problem = cluster_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the local SLURM cluster is not usable: {problem}", pytrace=False)
    pytest.skip(problem)
