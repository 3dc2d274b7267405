"""gaca's hooks on stand-in classes shaped like verl-agent's trainer (tests/backends/verl/fake_verl_agent.py),
with batches in verl-agent's exact layout."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

pytest.importorskip("verl")
pytestmark = pytest.mark.verl

from gaca.backends.verl.agent import hooks as agent_hooks  # noqa: E402
from gaca.backends.verl.agent.layout import build_layout_batch  # noqa: E402
from gaca.backends.verl.agent.options import ESTIMATOR_METHODS  # noqa: E402
from gaca.estimators import AdvantageConfig  # noqa: E402

from .fake_verl_agent import write_checkout  # noqa: E402
from .test_timing import ROUND_TRIP, WORK, Clock, group_of, stamped_worker_class  # noqa: E402


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def verl_agent(tmp_path: Path, request) -> SimpleNamespace:
    """Fresh stand-in modules (ray_trainer, rollout_loop) for each test."""
    write_checkout(tmp_path)
    prefix = f"fake_verl_agent_{request.node.name.replace('[', '_').replace(']', '_').replace('-', '_')}"
    ray_trainer = load(tmp_path / "verl/trainer/ppo/ray_trainer.py", f"{prefix}_ray_trainer")
    rollout = load(tmp_path / "agent_system/multi_turn_rollout/rollout_loop.py", f"{prefix}_rollout_loop")
    return SimpleNamespace(ray_trainer=ray_trainer, rollout=rollout)


def train(verl_agent: SimpleNamespace, estimator: str, steps: int = 2, actor_rollout_wg=None, **gaca_options):
    """The stand-in trainer's fit on fresh layout batches (seed = training step); the trainer and its config."""
    config = OmegaConf.create(
        {
            "algorithm": {"adv_estimator": estimator, "gamma": 0.95, "gaca": gaca_options},
            "trainer": {"total_training_steps": steps},
        }
    )
    made = []

    def make_batch(is_train: bool):
        made.append(build_layout_batch(num_tasks=3, group_size=4, max_steps=6, seed=len(made)))
        return made[-1].data

    collector = verl_agent.rollout.TrajectoryCollector(config, make_batch=make_batch)
    trainer = verl_agent.ray_trainer.RayPPOTrainer(
        config=config, traj_collector=collector, actor_rollout_wg=actor_rollout_wg
    )
    trainer.fit()
    return trainer, config, made


def test_without_the_hooks_verl_agent_refuses_gacas_estimators(verl_agent):
    with pytest.raises(NotImplementedError):
        train(verl_agent, "gaca")


@pytest.mark.parametrize("estimator", sorted(ESTIMATOR_METHODS))
def test_the_hooks_run_the_estimator_without_a_critic_on_stamped_steps(verl_agent, estimator):
    agent_hooks.install_hooks(verl_agent.ray_trainer)
    trainer, config, made = train(verl_agent, estimator, detector="random", seed=3)

    assert trainer.use_critic is False
    assert trainer.estimator_seen_by_init == "gigpo"  # the stand-in during __init__ only
    assert config.algorithm.adv_estimator == estimator
    for step, (batch, layout) in enumerate(zip(trainer.batches, made), start=1):
        assert batch.non_tensor_batch["step"].tolist() == layout.step.tolist()
        assert batch.meta_info["global_steps"] == step
        method = ESTIMATOR_METHODS[estimator]
        expected = layout.reference(
            AdvantageConfig(method=method, gamma=0.95, detector="random", seed=3).reseeded(step)
        )
        torch.testing.assert_close(batch.batch["advantages"], expected, rtol=0, atol=0)
    assert "step" not in trainer.validation.non_tensor_batch  # validation rollouts are left alone
    assert "multi_turn_loop" not in vars(trainer.traj_collector)  # the collector is itself again after fit


def test_other_estimators_go_to_verl_agents_own_code(verl_agent):
    agent_hooks.install_hooks(verl_agent.ray_trainer)
    agent_hooks.install_hooks(verl_agent.ray_trainer)  # idempotent
    with pytest.raises(NotImplementedError):  # the stand-in's compute_advantage has no grpo
        train(verl_agent, "grpo")
    estimator = verl_agent.ray_trainer.AdvantageEstimator.GiGPO
    data = build_layout_batch(seed=0).data
    out = verl_agent.ray_trainer.compute_advantage(data, adv_estimator=estimator, config=OmegaConf.create({}))
    assert "advantages" in out.batch.keys() and out.meta_info.get("advantages_by") is None  # an Enum name counts too
    with pytest.raises(RuntimeError, match="outside RayPPOTrainer.fit and without config="):
        verl_agent.ray_trainer.compute_advantage(data, "gaca")


def test_ray_init_gets_the_worker_setup_hook():
    calls = []
    ray = SimpleNamespace(init=lambda *args, **kwargs: calls.append(kwargs))
    agent_hooks.install_in_ray_workers(ray)
    agent_hooks.install_in_ray_workers(ray)  # idempotent
    ray.init(num_cpus=4, runtime_env={"env_vars": {"NCCL_DEBUG": "WARN"}})
    ray.init()
    assert calls == [
        {
            "num_cpus": 4,
            "runtime_env": {
                "env_vars": {"NCCL_DEBUG": "WARN"},
                "worker_process_setup_hook": agent_hooks.WORKER_SETUP_HOOK,
            },
        },
        {"runtime_env": {"worker_process_setup_hook": agent_hooks.WORKER_SETUP_HOOK}},
    ]
    with pytest.raises(ValueError, match="worker_process_setup_hook is 'other.setup'"):
        ray.init(runtime_env={"worker_process_setup_hook": "other.setup"})
    assert len(calls) == 2


@pytest.mark.parametrize("estimator", ["gaca", "gigpo"])
def test_each_step_logs_where_its_seconds_went(verl_agent, estimator, monkeypatch):
    from gaca import contract
    from gaca.backends.verl.agent import timing

    clock = Clock()
    monkeypatch.setattr(timing, "now", clock)
    group = group_of(stamped_worker_class()(clock), clock)
    originals = dict(vars(group))
    agent_hooks.install_hooks(verl_agent.ray_trainer)
    trainer, _, made = train(verl_agent, estimator, actor_rollout_wg=group)

    for metrics, layout in zip(trainer.timing, made):  # one generation call and one update per stand-in step
        tensors = layout.data.batch
        assert metrics == {
            "timing_s/adv": 0.25,
            contract.PERF_GENERATION_S: WORK["generate_sequences"],
            contract.PERF_UPDATE_S: WORK["update_actor"],
            contract.PERF_RAY_S: 2 * ROUND_TRIP,
            contract.PERF_ESTIMATOR_S: 0.25,
            contract.PERF_TOKENS_PER_S: float(tensors["response_mask"].sum()) / WORK["generate_sequences"],
            contract.PERF_TRAIN_TOKENS_PER_S: float(tensors["attention_mask"].sum()) / WORK["update_actor"],
        }
    assert vars(group) == originals  # the group's own methods again after fit
