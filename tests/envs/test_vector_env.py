"""VectorEnv equals stepping the same episodes one by one; ended episodes take None and give None."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaca.envs import VectorEnv

from .envtools import FAMILY_NAMES, family


def _choose(rng: random.Random, admissible, invalid_rate=0.1):
    return "not a command" if rng.random() < invalid_rate else rng.choice(admissible)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(FAMILY_NAMES),
    task_ids=st.lists(st.integers(0, 200), min_size=1, max_size=6),
    seed=st.integers(0, 10_000),
)
def test_vector_env_equals_a_loop_over_episodes(name, task_ids, seed):
    envs = family(name)
    vector = VectorEnv(envs, task_ids)
    rngs = [random.Random(seed + i) for i in range(len(task_ids))]
    observations = vector.reset()
    batched: list[list] = [[] for _ in task_ids]
    while any(vector.alive):
        actions = [
            _choose(rng, obs.admissible) if alive else None for rng, obs, alive in zip(rngs, observations, vector.alive)
        ]
        results = vector.step(actions)
        for i, result in enumerate(results):
            if result is not None:
                batched[i].append(result)
                observations[i] = result.observation
    assert all(episode[-1].done for episode in batched)

    rngs = [random.Random(seed + i) for i in range(len(task_ids))]
    for i, task_id in enumerate(task_ids):
        env = envs.make(task_id)
        observation, looped = env.reset(), []
        while not looped or not looped[-1].done:
            looped.append(env.step(_choose(rngs[i], observation.admissible)))
            observation = looped[-1].observation
        assert looped == batched[i]


def test_vector_env_rejects_misaligned_actions():
    vector = VectorEnv(family("household"), [0, 1])
    vector.reset()
    with pytest.raises(ValueError, match="one entry per episode \\(2\\), got 1"):
        vector.step(["look"])
    with pytest.raises(ValueError, match="actions\\[1\\] is None but episode 1 is alive"):
        vector.step(["look", None])
    vector.envs[0].horizon = 1
    assert vector.step(["look", "look"])[0].done
    assert vector.alive == [False, True]
    with pytest.raises(ValueError, match="actions\\[0\\] must be None: episode 0 is done"):
        vector.step(["look", "look"])
    results = vector.step([None, "look"])
    assert results[0] is None and results[1] is not None


def test_expert_actions_solve_a_batch():
    envs = family("shop")
    vector = VectorEnv(envs, list(envs.eval_task_ids[:16]))
    vector.reset()
    won = [False] * len(vector)
    while any(vector.alive):
        for i, result in enumerate(vector.step(vector.expert_actions())):
            won[i] = won[i] or bool(result and result.won)
    assert all(won)
