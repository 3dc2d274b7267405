"""What a task id holds does not depend on the process: every run and method sees the same tasks."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .envtools import trajectory_digest

# The bare "gaca" module skips gaca/__init__.py, whose torch import would dominate this test's time.
SUBPROCESS = """
import sys, types
package = types.ModuleType("gaca")
package.__path__ = [sys.argv[2]]
sys.modules["gaca"] = package
sys.path.insert(0, sys.argv[1])
import envtools
print(envtools.trajectory_digest())
"""


@pytest.mark.slow
def test_tasks_and_episodes_are_identical_under_another_hash_seed():
    """String hashing is randomised per process; set iteration order must not leak into tasks."""
    here = Path(__file__).resolve().parent
    other = subprocess.run(
        [sys.executable, "-c", SUBPROCESS, str(here), str(here.parents[1] / "gaca")],
        cwd=here.parents[1],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert other.stdout.strip() == trajectory_digest()
