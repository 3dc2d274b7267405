"""Helpers shared by the environment tests (imported relatively: this folder is a package)."""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable, Sequence

from gaca.envs import Env, EnvConfig, EnvFamily, StepResult, make_family

FAMILY_NAMES = ("household", "shop")
DIFFICULTIES = ("easy", "paper")


@functools.cache
def family(name: str, difficulty: str = "easy", seed: int = 0) -> EnvFamily:
    """A family with the default task counts, built once (the shop's builds a search index)."""
    return make_family(EnvConfig(name=name, difficulty=difficulty, seed=seed))


def play(env: Env, choose: Callable[[Env, Sequence[str]], str]) -> list[tuple[str, StepResult]]:
    """One whole episode from reset; returns (action, result) per step."""
    observation = env.reset()
    trajectory = []
    while True:
        action = choose(env, observation.admissible)
        result = env.step(action)
        trajectory.append((action, result))
        if result.done:
            return trajectory
        observation = result.observation


def random_chooser(seed: int) -> Callable[[Env, Sequence[str]], str]:
    rng = random.Random(seed)
    return lambda env, admissible: rng.choice(admissible)


def expert_chooser(env: Env, admissible: Sequence[str]) -> str:
    return env.expert_action()


def trajectory_digest() -> str:
    """A hash of vocabularies, tasks and random-policy episodes of both families and presets."""
    digest = hashlib.sha256()
    for name in FAMILY_NAMES:
        for difficulty in DIFFICULTIES:
            envs = make_family(EnvConfig(name=name, difficulty=difficulty))
            digest.update(" ".join(envs.vocabulary()).encode())
            for task_id in [*envs.eval_task_ids[:10], *envs.train_task_ids[:10]]:
                env = envs.make(task_id)
                first = env.reset()
                digest.update(f"{first.task}|{first.text}|{first.admissible}".encode())
                for _, result in play(env, random_chooser(task_id)):
                    observation = result.observation
                    digest.update(
                        f"{observation.text}|{observation.admissible}|{result.reward}|{result.score}".encode()
                    )
    return digest.hexdigest()
