"""Episode mechanics shared by both families: determinism, anchors, invalid actions, the horizon."""

import random

import pytest

from gaca.envs import EnvConfig, make_family

from .envtools import FAMILY_NAMES, expert_chooser, family, play, random_chooser

NONSENSE = "dance with the fridge"


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_same_task_same_trajectory(name):
    """Two families built from the same config replay identical episodes under identical actions."""
    first, second = make_family(EnvConfig(name=name)), make_family(EnvConfig(name=name))
    for task_id in first.train_task_ids[:30]:
        recorded = play(first.make(task_id), random_chooser(task_id))
        replay = second.make(task_id)
        replay.reset()
        assert [replay.step(action) for action, _ in recorded] == [result for _, result in recorded]
        assert first.make(task_id).reset() == second.make(task_id).reset()


@pytest.mark.parametrize("name, detour", [("household", ["inventory", "look"]), ("shop", None)])
def test_anchors_recur_after_a_detour(name, detour):
    """A rollout that wastes two steps then follows the planner sees the planner's anchors, two steps later."""
    envs = family(name)
    for task_id in envs.train_task_ids[:50]:
        env = envs.make(task_id)
        direct = [env.reset().anchor] + [r.observation.anchor for _, r in play(env, expert_chooser)]
        first = env.reset()
        steps = detour or [
            next(a for a in first.admissible if a != f"search[{env.goal.key_words}]"),
            "click[back to search]",
        ]
        detoured = [first.anchor] + [env.step(action).observation.anchor for action in steps]
        detoured += [r.observation.anchor for r in _continue_with_expert(env)]
        assert detoured[2:] == direct
        assert detoured[2] == detoured[0]  # "look" in the middle of the room / back on the search page


def _continue_with_expert(env):
    while True:
        result = env.step(env.expert_action())
        yield result
        if result.done:
            return


def _household_state(env):
    return (
        env.location,
        env.held,
        tuple(env.closed),
        tuple(env.where),
        tuple(env.is_clean),
        tuple(env.temperature),
        env.lamp_on,
    )


def _shop_state(env):
    return (env.page.kind, env.query, env.results_number, env.item, env.selection)


@pytest.mark.parametrize("name, state", [("household", _household_state), ("shop", _shop_state)])
def test_anchor_is_a_function_of_state_and_action_only(name, state):
    """Over many random rollouts of one task, equal (state, action) always give equal anchors,
    whatever the step count: anchors hold no history and no counters."""
    envs = family(name)
    for task_id in envs.train_task_ids[:5]:
        env = envs.make(task_id)
        seen: dict = {}
        shared = 0
        for seed in range(40):
            rng = random.Random(seed)
            observation = env.reset()
            done = False
            while not done:
                action = rng.choice(observation.admissible)
                result = env.step(action)
                key = (state(env), action if name == "household" else None)
                shared += key in seen
                assert seen.setdefault(key, result.observation.anchor) == result.observation.anchor
                assert result.observation.anchor == result.observation.text
                observation, done = result.observation, result.done
        assert shared > 0


@pytest.mark.parametrize("name, text", [("household", "nothing happens ."), ("shop", None)])
def test_invalid_action_costs_the_penalty_and_changes_nothing(name, text):
    envs = make_family(EnvConfig(name=name, invalid_penalty=0.25))
    env = envs.make(0)
    start = env.reset()
    result = env.step(NONSENSE)
    assert result.invalid and not result.done and not result.won
    assert result.reward == -0.25
    assert result.observation.text == (text or start.text)
    assert result.observation.admissible == start.admissible
    valid = env.step(start.admissible[0])
    fresh = envs.make(0)
    fresh.reset()
    assert valid == fresh.step(start.admissible[0])


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_horizon_ends_the_episode_unsolved(name):
    env = make_family(EnvConfig(name=name, horizon=4)).make(0)
    env.reset()
    results = [env.step(NONSENSE) for _ in range(4)]
    assert [r.done for r in results] == [False, False, False, True]
    assert not any(r.won for r in results)
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(NONSENSE)
    env.reset()
    assert not env.step(NONSENSE).done


def test_household_valid_steps_also_run_out():
    env = make_family(EnvConfig(name="household", horizon=3)).make(0)
    env.reset()
    assert [env.step("look").done for _ in range(3)] == [False, False, True]
