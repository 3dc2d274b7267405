"""The expert planner of each family solves every generated task within the horizon."""

import random

import pytest

from .envtools import DIFFICULTIES, FAMILY_NAMES, expert_chooser, family, play


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_planner_solves_every_task(name, difficulty):
    envs = family(name, difficulty)
    task_ids = list(envs.train_task_ids[:300]) + list(envs.eval_task_ids)
    lengths = []
    for task_id in task_ids:
        trajectory = play(envs.make(task_id), expert_chooser)
        action, last = trajectory[-1]
        assert last.won and last.reward == 1.0 and last.score == 1.0, (task_id, [a for a, _ in trajectory])
        assert not any(result.invalid for _, result in trajectory)
        lengths.append(len(trajectory))
    assert max(lengths) <= envs.horizon


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_planner_recovers_from_random_detours(name):
    """Behaviour cloning uses noisy demonstrations: the planner must replan from any state."""
    envs = family(name, "easy")
    rng = random.Random(0)
    for task_id in envs.train_task_ids[:200]:
        env = envs.make(task_id)
        observation = env.reset()
        for _ in range(3):
            detours = [a for a in observation.admissible if a != "click[buy now]"]
            result = env.step(rng.choice(detours))
            if result.done:
                break
            observation = result.observation
        while not result.done:
            result = env.step(env.expert_action())
            assert not result.invalid
        assert result.won, task_id
