"""backend=cpu|verl in the run config: validation at the boundary, dispatch by name, and run identity
(the default backend leaves every existing run key as it was)."""

from __future__ import annotations

import pytest

from gaca.backends import BACKENDS
from gaca.backends.config import BackendConfig
from gaca.compose import ConfigError
from gaca.tracking.identity import run_key

from .conftest import PAPER, compose_run


def test_every_backend_name_has_a_trainer():
    assert BACKENDS.names() == ["cpu", "verl"]
    assert all(callable(BACKENDS.get(name)) for name in BACKENDS)


def test_cpu_is_the_default_and_its_node_leaves_the_run_key_as_before_backends():
    for overrides in ([], ["algorithm=grpo", "env=shop"], ["algorithm=gigpo", "model=small", "seed=2"]):
        run, resolved = compose_run(*overrides)
        assert run.backend == BackendConfig(name="cpu")
        assert resolved["backend"] == {"name": "cpu"}
        before_backends = {key: value for key, value in resolved.items() if key != "backend"}
        assert run_key(resolved) == run_key(before_backends)
        # Whatever else a cpu backend node says, a cpu run is the same run.
        assert run_key({**resolved, "backend": {"name": "cpu", "max_response_length": 7}}) == run_key(before_backends)


def test_verl_is_another_run_but_placement_fields_are_not_identity():
    _, cpu = compose_run("trainer=paper", "model=path", "model.path=/models/x")
    _, verl = compose_run("backend=verl", "env=household", "trainer=paper", "model=path", "model.path=/models/x")
    assert run_key(cpu) != run_key(verl)
    _, placed = compose_run(
        *PAPER[:1],
        "env=household",
        "trainer=paper",
        "model=path",
        "model.path=/models/x",
        "backend.gpus_per_node=8",
        "backend.nnodes=2",
        "backend.data_dir=/data/elsewhere",
        "backend.verl_agent_dir=/src/verl-agent",
        "backend.trainer_command=[python,other.py]",
        "+backend.env_vars.NCCL_DEBUG=WARN",
        "backend.micro_batch_size_per_gpu=4",
    )
    assert run_key(placed) == run_key(verl)
    _, longer = compose_run(
        "backend=verl",
        "env=household",
        "trainer=paper",
        "model=path",
        "model.path=/models/x",
        "backend.max_response_length=1024",
    )
    assert run_key(longer) != run_key(verl)


def test_verl_backend_takes_the_paper_horizon_of_each_family_unless_overridden():
    household, _ = compose_run(*PAPER)
    shop, _ = compose_run(*PAPER, "env=shop")
    forced, _ = compose_run(*PAPER, "env.horizon=30")
    assert (household.env.horizon, shop.env.horizon, forced.env.horizon) == (None, None, 30)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["backend=verl", "env=household", "trainer=paper"], "model=path model.path="),
        (["backend=verl", "env=household", "trainer=paper", "model=small"], "model=small"),
        (["backend=verl", "env=household", "model=path", "model.path=/m"], "trainer.init=bc"),
        (
            [
                "backend=verl",
                "env=household",
                "trainer=paper",
                "model=path",
                "model.path=/m",
                "trainer.clip_ratio_c=null",
            ],
            "trainer.clip_ratio_c",
        ),
        (["backend.name=gpu"], "backend.name must be one of ['cpu', 'verl']"),
        (["backend=verl", "env=household", *PAPER[1:], "backend.nnodes=0"], "backend.nnodes"),
        (["backend=verl", "env=household", *PAPER[1:], "backend.trainer_command=[]"], "backend.trainer_command"),
        (["backend=verl", "env=household", *PAPER[1:], "backend.overrides=[no_equals_sign]"], "backend.overrides"),
        (["backend=verl", "env=household", *PAPER[1:], "+backend.gpus=4"], "backend.gpus"),
    ],
)
def test_bad_verl_configs_raise_a_config_error_naming_the_key(overrides, named):
    with pytest.raises(ConfigError) as error:
        compose_run(*overrides)
    assert named in str(error.value)
