"""ALFWorld's real engine: generated games of every task type, walkthroughs, anchors, invalid commands,
the engine pool, the game cache, and the official game layout (built here from generated games)."""

from __future__ import annotations

import gc
import importlib.util
import json
import random
import shutil

import pytest

if any(importlib.util.find_spec(name) is None for name in ("alfworld", "textworld")):
    # not pytest.importorskip: importing alfworld sets $ALFWORLD_DATA for the rest of the session
    pytest.skip("needs the alfworld extra (pip install 'gaca[alfworld]')", allow_module_level=True)

from gaca.envs import EnvConfig, VectorEnv, make_family, words
from gaca.envs.alfworld.engine import NOTHING_HAPPENS, new_engine, normalise
from gaca.envs.alfworld.lexicon import ALFRED_TASK_TYPE
from gaca.envs.household.lexicon import TASK_TYPES
from gaca.policy.tokenizer import build_word_tokenizer

PENALTY = 0.1


def config(tmp_path, **values) -> EnvConfig:
    knobs = {"task_types": TASK_TYPES}
    return EnvConfig(name="alfworld", knobs=knobs, invalid_penalty=PENALTY, cache_dir=str(tmp_path), **values)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("alfworld-games")


@pytest.fixture(scope="module")
def family(cache):
    return make_family(config(cache))


@pytest.fixture(scope="module")
def task_of_each_type(family) -> dict[str, int]:
    """The first evaluation task id of each of the six task types."""
    found: dict[str, int] = {}
    for task_id in family.eval_task_ids:
        found.setdefault(family.task(task_id).task_type, task_id)
        if len(found) == len(TASK_TYPES):
            return found
    raise AssertionError(f"only {sorted(found)} among {len(family.eval_task_ids)} tasks")


def play(env, actions):
    """Reset, take ``actions``; the observations (reset's first) and the step results."""
    observations, results = [env.reset()], []
    for action in actions:
        results.append(env.step(action))
        observations.append(results[-1].observation)
    return observations, results


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_the_planners_walkthrough_wins_a_generated_game_of_every_task_type(family, task_of_each_type, task_type):
    task_id = task_of_each_type[task_type]
    env = family.make(task_id)
    first = env.reset()
    assert first.task == family.task(task_id).instruction.replace(" on ", " in ")  # ALFWorld's template says "in"
    assert first.text.startswith("you are in the middle of a room . looking quickly around you , you see a ")
    assert all(f" a {name} " in first.text for name in family.task(task_id).receptacles), "household names survive"
    assert 2 <= len(env.walkthrough) <= 12
    _, results = play(env, env.walkthrough)
    assert [r.won for r in results] == [False] * (len(results) - 1) + [True]
    assert [r.reward for r in results] == [0.0] * (len(results) - 1) + [1.0]
    assert results[-1].done and not any(r.invalid for r in results)
    game = json.loads(env.game.read_text())
    assert game["solvable"] is True and tuple(game["walkthrough"]) == env.walkthrough


@pytest.mark.parametrize("task_type", ["pick_two_obj_and_place", "pick_heat_then_place"])
def test_the_expert_replans_from_any_state(family, task_of_each_type, task_type):
    """Random commands first (taking whatever is at hand); the planner still wins from there."""
    env = family.make(task_of_each_type[task_type])
    observation = env.reset()
    rng = random.Random(1)
    for _ in range(6):
        takes = [a for a in observation.admissible if a.startswith("take ")]
        observation = env.step(rng.choice(takes or list(observation.admissible))).observation
    for _ in range(env.horizon - 6):
        result = env.step(env.expert_action())
        if result.done:
            break
    assert result.won


def test_identical_states_give_identical_anchor_strings(family, task_of_each_type):
    env = family.make(task_of_each_type["pick_clean_then_place"])
    env.reset()
    first, _ = play(env, env.walkthrough)
    again, _ = play(env, env.walkthrough)
    assert len(first) == len(env.walkthrough) + 1 >= 4
    assert [o.anchor for o in first] == [o.anchor for o in again]
    assert [o.admissible for o in first] == [o.admissible for o in again]

    # two episodes on two engines reach "standing at the first receptacle" by different paths
    goal = env.walkthrough[0]
    other = next(a for a in first[0].admissible if a.startswith("go to ") and a != goal)
    direct, detour = family.make(env.task_id), family.make(env.task_id)
    (_, at_goal), _ = play(direct, [goal])
    (_, _, via_other), _ = play(detour, [other, goal])
    assert via_other.anchor == at_goal.anchor and via_other.admissible == at_goal.admissible
    assert at_goal.anchor == at_goal.text
    assert at_goal.anchor.startswith(f"you arrive at {goal.removeprefix('go to ')} .")


def test_an_invalid_command_gets_alfworlds_reply_and_the_penalty_and_changes_nothing(family, task_of_each_type):
    env = family.make(task_of_each_type["pick_and_place"])
    start = env.reset()
    walkthrough = env.walkthrough
    engine = new_engine()  # the engine's own answer to an unknown command
    engine.load(str(env.game))
    engine.reset()
    assert engine.step("jump around")[0].feedback == NOTHING_HAPPENS
    for bad in ("jump around", "help", f" {start.admissible[0]}"):
        result = env.step(bad)
        assert result.invalid and result.reward == -PENALTY and not result.won and not result.done
        assert result.observation.text == result.observation.anchor == normalise(NOTHING_HAPPENS) == "nothing happens ."
        assert result.observation.admissible == start.admissible and result.observation.task == start.task
    for action in walkthrough:  # the state did not move: the walkthrough still wins
        result = env.step(action)
    assert result.won


def test_the_horizon_ends_an_episode_and_step_after_the_end_raises(cache):
    env = make_family(config(cache, horizon=2)).make(0)
    env.reset()
    assert not env.step("look").done
    assert env.step("look").done
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("look")


def test_vector_env_plays_groups_and_engines_are_reused(cache):
    family = make_family(config(cache, num_eval_tasks=4))
    tasks = [0, 0, 1]
    for _ in range(2):
        envs = VectorEnv(family, tasks)
        envs.reset()
        while any(envs.alive):
            envs.step(envs.expert_actions())
        assert all(env.done for env in envs.envs)
        assert len(family.engines._idle) == len(tasks), "every ended episode hands its engine back"
    dropped = family.make(2)
    dropped.reset()
    assert len(family.engines._idle) == len(tasks) - 1
    del dropped
    # TextWorld's text generator keeps the frames of its last parse (and so its caller) until the next one
    family.make(1).reset()
    gc.collect()
    assert len(family.engines._idle) == len(tasks) - 1, "an abandoned episode hands its engine back too"


def test_generated_games_are_cached_by_content_and_written_once(cache, family, task_of_each_type, tmp_path):
    env = family.make(task_of_each_type["look_at_obj_in_light"])
    stamp = env.game.stat().st_mtime_ns
    again = make_family(config(cache)).make(env.task_id)
    assert again.game == env.game and env.game.stat().st_mtime_ns == stamp
    assert env.game.parent == cache and env.game.name.startswith("look_at_obj_in_light-")
    assert not [p for p in cache.iterdir() if p.suffix == ".tmp"]
    other_seed = make_family(config(tmp_path, seed=1))
    assert other_seed.task(env.task_id) != family.task(env.task_id)


def test_everything_the_engine_says_is_in_the_vocabulary(family, task_of_each_type):
    vocabulary = set(family.vocabulary())
    tokenizer = build_word_tokenizer(vocabulary)
    rng = random.Random(0)
    emitted: set[str] = set()
    for task_id in task_of_each_type.values():
        env = family.make(task_id)
        env.reset()
        observations, _ = play(env, env.walkthrough)
        observation = env.reset()
        for _ in range(4):
            observations.append(observation)
            result = env.step(rng.choice(observation.admissible))
            observation = result.observation
        for seen in observations:
            for text in (seen.text, seen.task, *seen.admissible):
                emitted.update(words(text))
            assert seen.text == " ".join(words(seen.text))
    assert emitted <= vocabulary, sorted(emitted - vocabulary)
    ids = tokenizer(" ".join(sorted(emitted)))["input_ids"]
    assert tokenizer.unk_token_id not in ids


def official_family(root, **values):
    return make_family(EnvConfig(name="alfworld", games_dir=str(root), **values))


def test_official_layout_is_played_as_alfworld_loads_it(family, task_of_each_type, tmp_path):
    """A json_2.1.1 folder as alfworld-download lays it out, filled with generated games."""
    root = tmp_path / "data"
    layout = {"train": TASK_TYPES[:3], "valid_seen": TASK_TYPES[3:], "valid_unseen": TASK_TYPES[:1]}
    for split, task_types in layout.items():
        for task_type in task_types:
            trial = root / "json_2.1.1" / split / f"{task_type}-Obj-None-Recep-1" / "trial_T0001"
            trial.mkdir(parents=True)
            shutil.copy(family.make(task_of_each_type[task_type]).game, trial / "game.tw-pddl")
            (trial / "traj_data.json").write_text(json.dumps({"task_type": ALFRED_TASK_TYPE[task_type]}))
    sliced = root / "json_2.1.1" / "valid_seen" / "pick_two_obj_and_place-AppleSliced-None-Fridge-1" / "trial_T0002"
    shutil.copytree(trial, sliced)  # ALFWorld's loader skips sliced (and movable) trials

    official = official_family(root, knobs={"task_types": TASK_TYPES}, num_eval_tasks=3)
    eval_games = [official.task(t) for t in official.eval_task_ids]
    assert [game.parent.parent.name.split("-")[0] for game in eval_games] == sorted(TASK_TYPES[3:])
    assert {official.task(t).parents[2].name for t in official.train_task_ids[:6]} == {"train"}
    for task_id in [*official.eval_task_ids, official.train_task_ids[0]]:
        env = official.make(task_id)
        env.reset()
        assert env.walkthrough
        _, results = play(env, env.walkthrough)
        assert results[-1].won
    with pytest.raises(ValueError, match=r"env.num_eval_tasks=4 exceeds the 3 playable games of .*valid_seen"):
        official_family(root, knobs={"task_types": TASK_TYPES}, num_eval_tasks=4)
    unseen = official_family(root, knobs={"eval_split": "valid_unseen"}, num_eval_tasks=1)
    assert unseen.task(0).parents[2].name == "valid_unseen"
