"""`python -m gaca.backends.verl.agent.main` on a stand-in verl-agent checkout: it checks the checkout,
and the hooks reach the trainer inside verl-agent's Ray actor (a real local Ray instance)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_verl_agent import write_checkout


def agent_main(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    """The job's entry point as backend=verl jobs start it: in the checkout, with it first on PYTHONPATH
    (``gaca.backends.verl.launcher.job.build_job``)."""
    inherited = os.environ.get("PYTHONPATH")
    path = str(checkout) + (os.pathsep + inherited if inherited else "")
    env = {**os.environ, "PYTHONPATH": path, "RAY_DISABLE_USAGE_STATS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gaca.backends.verl.agent.main", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_the_hooks_reach_the_trainer_in_verl_agents_ray_actor(tmp_path: Path):
    result = agent_main(write_checkout(tmp_path), "gaca")
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["pid"] != seen["driver_pid"]  # the trainer ran in the TaskRunner actor's process
    assert seen["use_critic"] is False and seen["estimator_seen_by_init"] == "gigpo"
    assert seen["estimator_after_init"] == "gaca"
    assert seen["step"] == [0, 1, 0, 1] and seen["global_steps"] == 2 and not seen["validation_stamped"]
    assert seen["advantages_by"] == "gaca"
    won, lost = seen["advantages"][0], seen["advantages"][2]  # trajectory a got reward 1, b none
    assert won > 0 > lost and seen["advantages"][1] == won and seen["advantages"][3] == lost


def test_a_checkout_missing_what_the_hooks_need_stops_before_training(tmp_path: Path):
    rollout = "agent_system/multi_turn_rollout/rollout_loop.py"
    result = agent_main(write_checkout(tmp_path, replace={rollout: (", is_train=True):", "):")}), "gaca")
    assert result.returncode == 2
    assert f"MISSING {rollout}: TrajectoryCollector.multi_turn_loop(..., is_train)" in result.stderr
    assert "Started a local Ray instance" not in result.stderr and result.stdout == ""
