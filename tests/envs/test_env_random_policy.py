"""On easy, a uniformly random admissible policy sometimes succeeds (the sparse reward is reachable)."""

import pytest

from .envtools import FAMILY_NAMES, family, play, random_chooser


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_random_policy_sometimes_succeeds_on_easy(name):
    envs = family(name, "easy")
    task_ids = envs.train_task_ids[:400]
    wins = sum(play(envs.make(t), random_chooser(t))[-1][1].won for t in task_ids)
    rate = wins / len(task_ids)
    print(f"{name} easy: random policy success {rate:.3f} over {len(task_ids)} tasks")
    assert 0.01 < rate < 0.5
