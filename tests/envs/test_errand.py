"""The errand testbed: the expert's walk, the pivotal choice, invalid commands, anchors, the vocabulary."""

import pytest

from gaca.envs import EnvConfig, make_family, words
from gaca.envs.errand import PRESETS
from gaca.envs.household.engine import NOTHING_HAPPENS

from .envtools import expert_chooser, play


def errand(difficulty: str = "long", **knobs):
    return make_family(EnvConfig(name="errand", difficulty=difficulty, horizon=80, knobs=knobs))


@pytest.mark.parametrize("difficulty", sorted(PRESETS))
def test_expert_wins_every_task_in_the_fewest_steps(difficulty):
    family = errand(difficulty)
    for task_id in [*family.eval_task_ids[:20], *family.train_task_ids[:20]]:
        trajectory = play(family.make(task_id), expert_chooser)
        assert trajectory[-1][1].won and trajectory[-1][1].reward == 1.0
        assert len(trajectory) == PRESETS[difficulty].route_length + 3  # take, the route, the goal, put


def test_the_first_choice_decides_the_outcome_at_the_end():
    family = errand()
    env = family.make(200)
    first = env.reset()
    task = family.task(200)
    wrong = next(o for o in task.objects if o.split()[0] != task.target_type)
    assert f"take {wrong} from {task.start}" in first.admissible
    results = [env.step(f"take {wrong} from {task.start}")]
    for stop in (*task.route, task.goal):
        results.append(env.step(f"go to {stop}"))
    assert all(r.reward == 0.0 and not r.done for r in results)
    last = env.step(f"put {wrong} in/on {task.goal}")
    assert last.done and not last.won and last.reward == 0.0


def test_a_wrong_object_can_be_exchanged_at_the_start():
    family = errand()
    env = family.make(7)
    env.reset()
    task = family.task(7)
    wrong = next(o for o in task.objects if o.split()[0] != task.target_type)
    env.step(f"take {wrong} from {task.start}")
    env.step(f"go to {task.route[0]}")
    trajectory = []
    while not env.done:
        trajectory.append(env.step(env.expert_action()))
    assert trajectory[-1].won and len(trajectory) == 3 + len(task.route) + 2  # back, put, take, the route, goal, put


def test_invalid_commands_are_offered_cost_the_penalty_and_change_nothing():
    family = errand()
    env = family.make(3)
    env.reset()
    task = family.task(3)
    target = next(o for o in task.objects if o.split()[0] == task.target_type)
    observation = env.step(f"take {target} from {task.start}").observation
    observation = env.step(f"go to {task.route[0]}").observation
    invalid = sorted(set(observation.commands) - set(observation.admissible))
    assert invalid == [f"go to {task.goal}", f"put {target} in/on {task.route[0]}"]
    result = env.step(f"go to {task.goal}")
    assert result.invalid and result.reward == -0.1 and result.observation.text == NOTHING_HAPPENS
    assert result.observation.commands == observation.commands  # the state did not change
    assert env.expert_action() == f"go to {task.route[1]}"


def test_rollouts_that_meet_in_one_state_share_its_anchor_and_show_held_splits_them():
    for show_held, same in ((0, True), (1, False)):
        family = errand(show_held=show_held)
        task = family.task(11)
        anchors = []
        for obj in task.objects[:2]:
            env = family.make(11)
            env.reset()
            env.step(f"take {obj} from {task.start}")
            anchors.append(env.step(f"go to {task.route[0]}").observation.anchor)
        assert (anchors[0] == anchors[1]) is same


def test_every_word_of_every_episode_is_in_the_vocabulary():
    family = errand("paper")
    vocabulary = set(family.vocabulary())
    for task_id in family.train_task_ids[:30]:
        env = family.make(task_id)
        observation = env.reset()
        seen = [observation.task, observation.text, *observation.commands]
        for _, result in play(env, expert_chooser):
            seen += [result.observation.text, *result.observation.commands]
        assert {w for text in seen for w in words(text)} <= vocabulary


def test_tasks_are_fixed_by_the_config_and_the_house_is_shared():
    a, b = errand().task(300), errand().task(300)
    assert a == b
    assert errand().task(301).route == a.route  # one house for every task
    assert errand(route_length=5).task(300).route != a.route[:4]


def test_the_demonstrator_walks_like_the_expert_but_chooses_at_chance():
    family = errand()
    chosen, won = [], []
    for task_id in family.train_task_ids[:300]:
        env = family.make(task_id)
        env.reset()
        task = family.task(task_id)
        trajectory = []
        while not env.done:
            trajectory.append((action := env.demonstration_action(), env.step(action)))
        assert len(trajectory) == len(task.route) + 3
        chosen.append(trajectory[0][0])
        won.append(trajectory[-1][1].won)
    assert 0.25 < sum(won) / len(won) < 0.42  # one of three objects, drawn uniformly per task
    assert len(set(chosen)) > 50


def test_prior_demonstrations_name_the_target_as_often_as_prior_accuracy_says():
    family = errand(prior_accuracy=0.5)
    demos = family.prior_demonstrations()
    assert len(demos) == 4 * len(family.train_task_ids)
    hits = []
    for observation, action in demos:
        assert action in observation.admissible and action.startswith("take ")
        task_type = observation.task.split(" put a ")[1].split()[0]
        hits.append(action.split()[1] == task_type)
    assert abs(sum(hits) / len(hits) - 0.5) < 0.03  # 4096 draws: 3 points is over 3.5 standard errors
    per_task = [hits[k : k + 4] for k in range(0, len(hits), 4)]
    assert any(len(set(labels)) > 1 for labels in per_task)  # labels are drawn afresh per repeat
    assert family.prior_demonstrations() == demos  # deterministic
    assert errand(prior_accuracy=0.0).prior_demonstrations() == []
    assert all(a.split()[1] == o.task.split(" put a ")[1].split()[0] for o, a in errand(prior_accuracy=1.0).prior_demonstrations())


def test_prior_accuracy_is_validated_by_name():
    with pytest.raises(ValueError, match="knobs.prior_accuracy must be a number in \\[0, 1\\], got 1.5"):
        errand(prior_accuracy=1.5)
