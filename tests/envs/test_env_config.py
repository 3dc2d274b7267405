"""EnvConfig and the knobs reject bad values by field name; presets and overrides resolve."""

import pytest

from gaca.envs import FAMILIES, EnvConfig, make_family


@pytest.mark.parametrize(
    "changes, pattern",
    [
        (dict(name="forest"), r"env.name must be one of \['alfworld', 'errand', 'household', 'shop'\], got 'forest'"),
        (dict(horizon=0), r"env.horizon must be an int in \[1, "),
        (dict(horizon=2.5), r"env.horizon must be an int"),
        (dict(num_train_tasks=0), r"env.num_train_tasks must be an int in \[1, "),
        (dict(num_eval_tasks=-1), r"env.num_eval_tasks must be an int in \[1, "),
        (dict(seed=-3), r"env.seed must be an int"),
        (dict(invalid_penalty=-0.1), r"env.invalid_penalty must be >= 0"),
        (dict(invalid_penalty=float("nan")), r"env.invalid_penalty"),
        (dict(difficulty="hard"), r"env.difficulty must be one of \['easy', 'paper'\], got 'hard'"),
        (dict(knobs=[1]), r"env.knobs must be a mapping"),
        (dict(knobs={"rooms": 3}), r"env.knobs has unknown knob\(s\) \['rooms'\]; known: \['num_receptacles'"),
        (dict(knobs={"num_receptacles": 2}), r"env.knobs.num_receptacles must be an int in \[3, 40\], got 2"),
        (dict(knobs={"closed_fraction": 1.5}), r"env.knobs.closed_fraction must be a number in \[0, 1\]"),
        (dict(knobs={"task_types": ["pick_and_place", "juggle"]}), r"env.knobs.task_types must be .* from \["),
        (dict(knobs={"task_types": []}), r"env.knobs.task_types must be a non-empty list"),
        (
            dict(name="shop", knobs={"catalogue_size": 5}),
            r"env.knobs.catalogue_size must be an int in \[10, 5000\]",
        ),
        (
            dict(name="shop", knobs={"instruction_attributes": 3}),
            r"env.knobs.instruction_attributes must be an int in \[0, 2\], got 3",
        ),
        (dict(name="shop", knobs={"max_results": 2}), r"env.knobs.max_results must be an int in \[3, 100\]"),
    ],
)
def test_bad_values_name_the_field(changes, pattern):
    with pytest.raises(ValueError, match=pattern):
        EnvConfig(**changes)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match=r"unknown key\(s\) \[.env.horizn.\]"):
        EnvConfig.from_dict({"name": "shop", "horizn": 15})
    assert EnvConfig.from_dict({"name": "shop", "horizon": 15}) == EnvConfig(name="shop", horizon=15)


def test_registry_lists_the_families():
    assert FAMILIES.names() == ["alfworld", "errand", "household", "shop"]
    with pytest.raises(ValueError, match="known: alfworld, errand, household, shop"):
        FAMILIES.get("webshop")


@pytest.mark.parametrize("name, horizon", [("household", 50), ("shop", 15)])
def test_horizon_defaults_to_the_papers(name, horizon):
    assert make_family(EnvConfig(name=name)).horizon == horizon
    assert make_family(EnvConfig(name=name, horizon=7)).horizon == 7


def test_overrides_change_single_knobs_of_the_preset():
    family = make_family(EnvConfig(difficulty="paper", knobs={"num_receptacles": 8, "task_types": ("pick_and_place",)}))
    assert family.knobs.num_receptacles == 8
    assert family.knobs.task_types == ("pick_and_place",)
    assert family.knobs.num_distractors == 16  # the paper preset's
    rooms = [family.make(t).task for t in family.train_task_ids[:50]]
    assert {len(task.receptacles) for task in rooms} == {8}
    assert {task.task_type for task in rooms} == {"pick_and_place"}
