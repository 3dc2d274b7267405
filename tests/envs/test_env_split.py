"""The train/eval split: disjoint, sized by the config, and a function of the config alone."""

import pytest

from gaca.envs import EnvConfig, make_family

from .envtools import FAMILY_NAMES


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_split_is_disjoint_and_sized(name):
    family = make_family(EnvConfig(name=name, num_train_tasks=300, num_eval_tasks=128))
    assert len(family.eval_task_ids) == 128
    assert len(family.train_task_ids) == 300
    assert not set(family.eval_task_ids) & set(family.train_task_ids)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_split_depends_only_on_the_config(name):
    first = make_family(EnvConfig(name=name, seed=3))
    again = make_family(EnvConfig(name=name, seed=3))
    more_training = make_family(EnvConfig(name=name, seed=3, num_train_tasks=2000))
    for other in (again, more_training):
        assert list(other.eval_task_ids) == list(first.eval_task_ids)
        for task_id in first.eval_task_ids[:20]:
            assert other.make(task_id).reset() == first.make(task_id).reset()


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_the_seed_changes_the_tasks(name):
    families = [make_family(EnvConfig(name=name, seed=seed)) for seed in (0, 1)]
    instructions = [[family.make(t).reset().task for t in range(10)] for family in families]
    assert instructions[0] != instructions[1]


def test_make_rejects_bad_task_ids():
    family = make_family(EnvConfig())
    with pytest.raises(ValueError, match="task_id must be an int >= 0, got -1"):
        family.make(-1)
    with pytest.raises(ValueError, match="task_id must be an int >= 0, got '3'"):
        family.make("3")


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_training_never_holds_an_evaluation_task(name):
    """Household: no training room-and-goal equals an evaluation one (ALFWorld's split);
    shop: no training instruction equals an evaluation one (WebShop's split)."""
    envs = make_family(EnvConfig(name=name))
    held_out = {envs.task_signature(envs.task(t)) for t in envs.eval_task_ids}
    assert not held_out & {envs.task_signature(envs.task(t)) for t in envs.train_task_ids}


def test_too_few_distinct_tasks_to_hold_out_is_reported():
    tiny = dict(catalogue_size=10, num_categories=2, instruction_attributes=0, num_option_types=0)
    envs = make_family(EnvConfig(name="shop", knobs=tiny))
    envs.make(0)  # evaluation tasks need no redraw
    with pytest.raises(RuntimeError, match="too few distinct tasks for num_eval_tasks=128"):
        envs.make(envs.train_task_ids[0])
