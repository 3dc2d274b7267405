"""Bad alfworld settings fail at validation with the field's name, through EnvConfig and through Hydra."""

from __future__ import annotations

import importlib.util

import pytest

if any(importlib.util.find_spec(name) is None for name in ("alfworld", "textworld")):
    pytest.skip("needs the alfworld extra (pip install 'gaca[alfworld]')", allow_module_level=True)

from hydra import compose, initialize_config_dir

from gaca.compose import CONF_DIR, ConfigError, validate
from gaca.envs import FAMILIES, EnvConfig


@pytest.mark.parametrize(
    "values, message",
    [
        ({"knobs": {"task_types": ["pick_and_fly"]}}, r"env.knobs.task_types must be a non-empty list"),
        ({"knobs": {"eval_split": "test"}}, r"env.knobs.eval_split must be one of \['valid_seen', 'valid_un"),
        ({"knobs": {"num_rooms": 3}}, r"env.knobs has unknown knob\(s\) \['num_rooms'\]"),
        ({"horizon": 0}, r"env.horizon must be an int in \[1, 10000\], got 0"),
        ({"cache_dir": ""}, r"env.cache_dir must be a folder path or null"),
        ({"difficulty": "hard"}, r"env.difficulty must be one of \['easy', 'paper'\]"),
    ],
)
def test_bad_values_name_the_field(values, message):
    with pytest.raises(ValueError, match=message):
        EnvConfig(name="alfworld", **values)


def test_a_games_dir_without_games_names_the_field(tmp_path):
    with pytest.raises(ValueError, match=r"env.games_dir=.* has no json_2.1.1/train/\*\*/game.tw-pddl"):
        EnvConfig(name="alfworld", games_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"env.games_dir=.* is not a folder"):
        EnvConfig(name="alfworld", games_dir=str(tmp_path / "missing"))


def test_game_folders_belong_to_alfworld_only(tmp_path):
    with pytest.raises(ValueError, match="env.games_dir applies to env alfworld only; leave it null for hou"):
        EnvConfig(name="household", games_dir=str(tmp_path))
    with pytest.raises(ValueError, match="env.cache_dir applies to env alfworld only; leave it null for shop"):
        EnvConfig(name="shop", cache_dir=str(tmp_path))


def test_the_family_is_registered():
    assert "alfworld" in FAMILIES.names()


def compose_run(*overrides):
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return validate(compose("train", overrides=["env=alfworld", "trainer=quick", *overrides]))


def test_hydra_reads_the_official_games_from_alfworld_data(tmp_path, monkeypatch):
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    run, resolved = compose_run()
    assert (run.env.name, run.env.games_dir, run.env.horizon) == ("alfworld", None, 20)
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    with pytest.raises(ConfigError, match=r"env.games_dir=.* \(conf/env/alfworld.yaml reads \$ALFWORLD"):
        compose_run()
    with pytest.raises(ConfigError, match=r"env.knobs.task_types must be"):
        compose_run("env.games_dir=null", "env.knobs.task_types=[fly]")
    with pytest.raises(ConfigError, match=r"env.horizon must be an int in \[1, 10000\], got 0"):
        compose_run("env.games_dir=null", "env.horizon=0")
