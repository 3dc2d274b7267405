"""The errand testbed: the expert's walk, the pivotal choice, invalid commands, anchors, the vocabulary."""

import pytest

from gaca.envs import EnvConfig, make_family, words
from gaca.envs.errand import PRESETS
from gaca.envs.household.engine import NOTHING_HAPPENS

from .envtools import expert_chooser, play


def errand(difficulty: str = "long", **knobs):
    return make_family(EnvConfig(name="errand", difficulty=difficulty, horizon=80, knobs=knobs))


def head(task) -> str:
    """The command that leaves the start for the goal: "go to <goal>" where several ends wait."""
    return f"go to {task.goal}" if len(task.ends) > 1 else f"go to {task.route[0]}"


def walk_to_goal(env, task) -> list:
    """Head for the goal, walk its route, arrive at it; the step results."""
    return [env.step(head(task)), *(env.step(f"go to {stop}") for stop in (*task.route[1:], task.goal))]


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
    results = [env.step(f"take {wrong} from {task.start}"), *walk_to_goal(env, task)]
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
    env.step(head(task))
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
    observation = env.step(head(task)).observation
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
            anchors.append(env.step(head(task)).observation.anchor)
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
    assert errand().task(301).routes == a.routes  # one house for every task
    assert errand(route_length=5).task(300).routes[0] != a.routes[0][:4]
    assert len(set(a.routes[0] + a.routes[1] + a.routes[2])) == 3 * len(a.route)  # the routes share no stop


@pytest.mark.parametrize("num_goals", [1, 3])
def test_the_demonstrator_walks_like_the_expert_but_chooses_at_chance(num_goals):
    family = errand(num_goals=num_goals)
    chosen, won, ends = [], [], []
    for task_id in family.train_task_ids[:300]:
        env = family.make(task_id)
        env.reset()
        task = family.task(task_id)
        trajectory = []
        while not env.done:
            trajectory.append((action := env.demonstration_action(), env.step(action)))
        assert len(trajectory) == len(task.route) + 3
        chosen.append(trajectory[0][0])
        ends.append(trajectory[-2][0] == f"go to {task.goal}")
        won.append(trajectory[-1][1].won)
    rate = 1 / 3 / num_goals  # one of three objects and one of num_goals ends, drawn uniformly per task
    assert abs(sum(won) / len(won) - rate) < 0.08
    assert abs(sum(ends) / len(ends) - 1 / num_goals) < 0.1
    assert len(set(chosen)) > 50


@pytest.mark.parametrize("num_goals", [1, 3])
def test_prior_demonstrations_are_right_as_often_as_prior_accuracy_says(num_goals):
    family = errand(prior_accuracy=0.5, num_goals=num_goals)
    demos = family.prior_demonstrations()
    pivots = ["object"] if num_goals == 1 else ["object", "end"]
    assert len(demos) == 4 * len(pivots) * len(family.train_task_ids)
    for pivot in pivots:
        hits = []
        for choice, action in (d for d in demos if d[0].pivot == pivot):
            assert action in choice.observation.admissible and action in (choice.right, *choice.wrong)
            assert action.startswith("take " if pivot == "object" else "go to ")
            named = choice.observation.task.split(" put a ")[1].split()
            assert choice.right.split()[1 if pivot == "object" else 2] == named[0 if pivot == "object" else 2]
            hits.append(action == choice.right)
        assert abs(sum(hits) / len(hits) - 0.5) < 0.03  # 4096 draws: 3 points is over 3.5 standard errors
        per_task = [hits[k : k + 4] for k in range(0, len(hits), 4)]
        assert any(len(set(labels)) > 1 for labels in per_task)  # labels are drawn afresh per repeat
    assert family.prior_demonstrations() == demos  # deterministic
    assert errand(prior_accuracy=0.0).prior_demonstrations() == []
    assert all(a == c.right for c, a in errand(prior_accuracy=1.0, num_goals=num_goals).prior_demonstrations())


def test_the_end_choice_is_shown_with_the_history_a_rollout_prompt_has():
    family = errand(prior_accuracy=0.5, num_goals=3)
    task_id = family.train_task_ids[5]
    end = next(c for c in family.prior_choices([task_id]) if c.pivot == "end")
    env = family.make(task_id)
    observation = env.reset()
    for seen, action in end.history:
        assert seen == observation.text
        observation = env.step(action).observation
    task = family.task(task_id)
    assert observation == end.observation and len(end.history) == 1 and end.right == f"go to {task.goal}"
    assert sorted((end.right, *end.wrong)) == [f"go to {e}" for e in task.ends]
    assert f"the way on leads to {' , '.join(task.ends)} ." in family.make(task_id).reset().text


def test_a_second_pivot_decides_which_end_the_walk_reaches():
    family = errand(num_goals=3)
    for task_id in [*family.eval_task_ids[:10], *family.train_task_ids[:10]]:
        task = family.task(task_id)
        assert len(task.ends) == 3 and task.goal in task.ends and len({e.split()[0] for e in task.ends}) == 3
        assert task.start not in task.ends
        target = next(o for o in task.objects if o.split()[0] == task.target_type)
        for route, end in enumerate(task.ends):
            env = family.make(task_id)
            env.reset()
            env.step(f"take {target} from {task.start}")
            arrived = env.step(f"go to {end}")
            assert arrived.observation.text.startswith(f"you arrive at {task.routes[route][0]} .")
            for stop in task.routes[route][1:]:
                assert not env.step(f"go to {stop}").done
            assert not env.step(f"go to {end}").done
            last = env.step(f"put {target} in/on {end}")
            assert last.done and last.won == (end == task.goal) and last.reward == float(end == task.goal)
        assert play(family.make(task_id), expert_chooser)[-1][1].won


def test_the_expert_walks_back_from_a_wrong_route():
    family = errand(num_goals=3)
    task = family.task(11)
    env = family.make(11)
    env.reset()
    target = next(o for o in task.objects if o.split()[0] == task.target_type)
    env.step(f"take {target} from {task.start}")
    wrong = next(r for r, e in enumerate(task.ends) if e != task.goal)
    env.step(f"go to {task.ends[wrong]}")
    for stop in task.routes[wrong][1:3]:
        env.step(f"go to {stop}")
    steps = []
    while not env.done:
        steps.append(env.step(env.expert_action()))
    assert steps[-1].won and len(steps) == 3 + 1 + len(task.route) + 1  # back to the start, head, the route, put


def test_one_end_keeps_the_tasks_and_the_house_of_the_one_pivot_errand():
    one, three = errand(num_goals=1), errand(num_goals=3)
    for task_id in range(20):
        a, b = one.task(task_id), three.task(task_id)
        assert a.ends == (a.goal,) and (a.objects, a.start, a.goal) == (b.objects, b.start, b.goal)
        assert a.route == b.routes[0]


def test_the_house_must_hold_every_route_and_dead_end():
    with pytest.raises(
        ValueError, match=r"env.knobs: \(num_goals \+ num_side\) x route_length receptacles must be at most 160"
    ):
        errand(num_goals=4, num_side=4, route_length=21)


def test_prior_accuracy_is_validated_by_name():
    with pytest.raises(ValueError, match="knobs.prior_accuracy must be a number in \\[0, 1\\], got 1.5"):
        errand(prior_accuracy=1.5)


def test_an_indirect_instruction_names_the_use_and_keeps_every_draw():
    from gaca.envs.errand.world import USES

    direct, indirect = errand(num_types=24), errand(num_types=24, indirect=1)

    def draws(task) -> tuple:
        return task.target_type, task.objects, task.goal, task.ends, task.routes

    for task_id in [*direct.train_task_ids[:30], *direct.eval_task_ids[:10]]:
        b = indirect.task(task_id)
        assert draws(direct.task(task_id)) == draws(b)
        assert f"something for {USES[b.target_type]} " in b.instruction
        assert b.target_type not in words(b.instruction)  # the type itself is never named
    assert len(set(USES.values())) == len(USES)  # one use per type: the association is one-to-one
    added = set(indirect.vocabulary()) - set(direct.vocabulary())
    assert added == {"something", "for", *USES.values()}  # new words only, none shared with the direct text
    assert set(direct.vocabulary()) == set(errand(num_types=24, indirect=0).vocabulary())


@pytest.mark.parametrize(
    ("knobs", "named"), [({"indirect": 2}, "env.knobs.indirect"), ({"num_types": 34}, "num_types")]
)
def test_knobs_out_of_range_are_refused_by_name(knobs, named):
    with pytest.raises(ValueError, match=named):
        errand(**knobs)
