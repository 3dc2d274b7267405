"""A stand-in verl-agent checkout for tests: three files shaped like verl-agent's (the names,
signatures and calls that gaca's hooks rely on), small enough to run on CPU without verl.

``main_ppo.py`` (argument: the estimator name) starts Ray and builds the trainer inside a Ray actor,
as verl-agent does; its rollout returns a tiny batch of plain dicts (two trajectories of one task);
it prints what the trainer saw as one JSON line.
"""

from __future__ import annotations

from pathlib import Path

RAY_TRAINER = """
from enum import Enum


class AdvantageEstimator(str, Enum):
    GAE = "gae"
    GRPO = "grpo"
    GiGPO = "gigpo"


def compute_advantage(data, adv_estimator, gamma=1.0, lam=1.0, num_repeat=1, norm_adv_by_std_in_grpo=True, **kwargs):
    if adv_estimator == AdvantageEstimator.GiGPO:
        data.meta_info["advantages_by"] = "verl-agent"
        return data
    raise NotImplementedError


def compute_timing_metrics(batch, timing_raw):
    return {f"timing_s/{name}": seconds for name, seconds in timing_raw.items()}


class RayPPOTrainer:
    def __init__(self, config, tokenizer=None, traj_collector=None, envs=None, actor_rollout_wg=None):
        self.config = config
        self.traj_collector = traj_collector
        self.envs = envs
        self.actor_rollout_wg = actor_rollout_wg
        if self.config.algorithm.adv_estimator == AdvantageEstimator.GAE:
            self.use_critic = True
        elif self.config.algorithm.adv_estimator in [AdvantageEstimator.GRPO, AdvantageEstimator.GiGPO]:
            self.use_critic = False
        else:
            raise NotImplementedError
        self.estimator_seen_by_init = str(self.config.algorithm.adv_estimator)

    def fit(self):
        self.global_steps = 0
        self.batches = []
        self.timing = []
        for _ in range(self.config.trainer.total_training_steps):
            self.global_steps += 1
            batch = self.traj_collector.multi_turn_loop(
                gen_batch=None, actor_rollout_wg=self.actor_rollout_wg, envs=self.envs, is_train=True
            )
            batch = compute_advantage(
                batch, adv_estimator=self.config.algorithm.adv_estimator, gamma=self.config.algorithm.gamma
            )
            if self.actor_rollout_wg is not None:
                self.actor_rollout_wg.update_actor(batch)
            self.batches.append(batch)
            self.timing.append(compute_timing_metrics(batch=batch, timing_raw={"adv": 0.25}))
        self.validation = self.traj_collector.multi_turn_loop(
            gen_batch=None, actor_rollout_wg=None, envs=self.envs, is_train=False
        )
"""

ROLLOUT_LOOP = """
FIELDS = ("uid", "traj_uid", "rewards", "anchor_obs", "is_action_valid")


class TrajectoryCollector:
    def __init__(self, config, make_batch=None):
        self.config = config
        self.make_batch = make_batch

    def multi_turn_loop(self, gen_batch, actor_rollout_wg, envs, is_train=True):
        if actor_rollout_wg is not None:
            actor_rollout_wg.generate_sequences(gen_batch)
        batch = self.make_batch(is_train)
        assert set(FIELDS) <= set(batch.non_tensor_batch)
        return batch
"""

MAIN_PPO = '''
import json
import os
import sys
from types import SimpleNamespace

import numpy as np
import ray
import torch
from omegaconf import OmegaConf

from verl.trainer.ppo.ray_trainer import RayPPOTrainer


class Batch:
    """The little of verl's DataProto that the hooks and gaca's adapter use."""

    def __init__(self):
        mask = torch.ones(4, 3, dtype=torch.long)
        self.batch = {"response_mask": mask, "old_log_probs": -torch.ones(4, 3)}
        self.non_tensor_batch = {
            "uid": np.array(["task"] * 4, dtype=object),
            "traj_uid": np.array(["a", "a", "b", "b"], dtype=object),
            "rewards": np.array([0.0, 1.0, 0.0, 0.0], dtype=object),
            "anchor_obs": np.array(["start", "hall", "start", "hall"], dtype=object),
            "is_action_valid": np.array([True, True, True, False]),
        }
        self.meta_info = {}

    def __len__(self):
        return 4


def main():
    config = OmegaConf.create({
        "algorithm": {"adv_estimator": sys.argv[1], "gamma": 0.95, "gaca": {"detector": "uniform"}},
        "trainer": {"total_training_steps": 2},
    })
    ray.init(num_cpus=1, include_dashboard=False, runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "true"}})
    print(json.dumps({**ray.get(TaskRunner.remote().run.remote(config)), "driver_pid": os.getpid()}))


@ray.remote(num_cpus=1)
class TaskRunner:
    def run(self, config):
        from agent_system.multi_turn_rollout.rollout_loop import TrajectoryCollector

        collector = TrajectoryCollector(config, make_batch=lambda is_train: Batch())
        trainer = RayPPOTrainer(config=config, traj_collector=collector)
        trainer.fit()
        last = trainer.batches[-1]
        return {
            "pid": os.getpid(),
            "use_critic": trainer.use_critic,
            "estimator_seen_by_init": trainer.estimator_seen_by_init,
            "estimator_after_init": str(config.algorithm.adv_estimator),
            "step": [int(s) for s in last.non_tensor_batch.get("step", [])],
            "global_steps": last.meta_info.get("global_steps"),
            "advantages_by": last.meta_info.get("advantages_by", "gaca" if "advantages" in last.batch else None),
            "advantages": last.batch["advantages"][:, 0].tolist() if "advantages" in last.batch else None,
            "validation_stamped": "step" in trainer.validation.non_tensor_batch,
        }


if __name__ == "__main__":
    main()
'''

FILES = {
    "verl/__init__.py": "",
    "verl/trainer/__init__.py": "",
    "verl/trainer/ppo/__init__.py": "",
    "verl/trainer/main_ppo.py": MAIN_PPO,
    "verl/trainer/ppo/ray_trainer.py": RAY_TRAINER,
    "agent_system/__init__.py": "",
    "agent_system/multi_turn_rollout/__init__.py": "",
    "agent_system/multi_turn_rollout/rollout_loop.py": ROLLOUT_LOOP,
}


def write_checkout(root: Path, replace: dict[str, tuple[str, str]] | None = None) -> Path:
    """Write the stand-in checkout under ``root``; ``replace`` maps a file to (old, new) text to swap."""
    for path, text in FILES.items():
        if replace and path in replace:
            old, new = replace[path]
            assert old in text, (path, old)
            text = text.replace(old, new)
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root
