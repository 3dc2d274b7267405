"""Every dataclass default is the value the composed YAML gives: one default, in two spellings kept equal."""

from dataclasses import asdict

import pytest

from gaca.backends.config import BackendConfig, RunConfig, TrackingConfig, TrainerConfig
from gaca.compose import compose, resolve
from gaca.estimators import AdvantageConfig
from gaca.policy.config import ModelConfig


@pytest.fixture(scope="module")
def default():
    """conf/train.yaml with its own defaults (algorithm=gaca, trainer=default, backend=cpu)."""
    return resolve(compose([]))


def test_the_trainer_tracking_and_backend_defaults_are_the_yaml(default):
    assert asdict(TrainerConfig()) == default["trainer"]
    assert asdict(TrackingConfig()) == default["tracking"]
    assert {key: value for key, value in asdict(BackendConfig()).items() if key in default["backend"]} == default[
        "backend"
    ]


def test_the_model_defaults_are_the_yaml(default):
    """conf/model/tiny.yaml, the sizes left to the preset in both."""
    assert ModelConfig() == ModelConfig.from_dict(default["model"])


def test_the_run_defaults_are_the_yaml(default):
    fields = RunConfig.__dataclass_fields__
    for key in ("seed", "block", "output_dir", "resume", "extend"):
        assert fields[key].default == default[key], key


@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_each_algorithm_file_is_the_estimators_defaults_with_its_method(method):
    assert resolve(compose([f"algorithm={method}"]))["algorithm"] == AdvantageConfig(method=method).to_dict()
