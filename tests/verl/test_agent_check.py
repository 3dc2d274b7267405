"""`gaca verl-agent check PATH` on stand-in checkouts: complete (exit 0), something missing (exit 2)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gaca.backends.verl.agent_check import REQUIREMENTS

from ..orchestration.conftest import gaca
from .fake_verl_agent import write_checkout

RAY_TRAINER = "verl/trainer/ppo/ray_trainer.py"
ROLLOUT = "agent_system/multi_turn_rollout/rollout_loop.py"


def test_a_complete_checkout_passes_every_item_in_under_10_seconds(tmp_path: Path):
    write_checkout(tmp_path)
    start = time.perf_counter()
    result = gaca("verl-agent", "check", str(tmp_path), cwd=tmp_path)
    assert time.perf_counter() - start < 10
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("  ok ") for line in lines) == len(REQUIREMENTS)
    assert lines[-1] == f"all {len(REQUIREMENTS)} present: backend=verl jobs can run this checkout unmodified"


@pytest.mark.parametrize(
    ("path", "old", "new", "problem"),
    [
        (RAY_TRAINER, "def compute_advantage(", "def compute_advantages(", "no module-level function compute_advantage"),
        (ROLLOUT, ", is_train=True):", "):", "TrajectoryCollector.multi_turn_loop('self', 'gen_batch', "
         "'actor_rollout_wg', 'envs') has no is_train parameter"),
        (RAY_TRAINER, "self.use_critic = ", "self.critic = ",
         "RayPPOTrainer.__init__ does not set self.use_critic"),
        (RAY_TRAINER, "    GiGPO = \"gigpo\"\n", "", "AdvantageEstimator has no member equal to 'gigpo'"),
    ],
)
def test_a_missing_function_or_signature_is_named_with_exit_2(tmp_path: Path, path, old, new, problem):
    write_checkout(tmp_path, replace={path: (old, new)})
    result = gaca("verl-agent", "check", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    missing = [line for line in result.stdout.splitlines() if line.startswith("  MISSING")]
    assert len(missing) >= 1 and all(f" {path}: " in line for line in missing)
    assert any(line.endswith(f": {problem}") for line in missing), missing
    assert f"of {len(REQUIREMENTS)} missing" in result.stdout.splitlines()[-1]


def test_a_folder_that_is_no_checkout_misses_every_file(tmp_path: Path):
    result = gaca("verl-agent", "check", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.count("file not found") == len(REQUIREMENTS)
