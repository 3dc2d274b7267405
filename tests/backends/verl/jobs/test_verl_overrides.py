"""The generated verl command line against verl 0.9.1's own ``ppo_trainer.yaml``, composed through
Hydra's compose API: every plain key exists there, the ``++`` keys are exactly verl-agent's own
(plus ``trainer.use_v1``, which verl-agent's older config lacks) and the ``+`` keys exactly the
plugin's options, every value reads back as generated, verl's typed configs, its
``validate_config`` and gaca's plugin accept them (but for the one rule in which verl-agent
differs), and the paper's values land on the keys verl and verl-agent read."""

from __future__ import annotations

import functools

import pytest
from omegaconf import OmegaConf, open_dict

from gaca.backends.verl.launcher.job import build_job, hydra_value
from gaca.estimators import AdvantageConfig
from gaca.estimators.registry import verl_names
from gaca.tracking.identity import run_key

from .conftest import MODEL, PAPER, compose_run, compose_verl

pytestmark = pytest.mark.verl

VERL_AGENT_KEYS = {
    "env.env_name",
    "env.seed",
    "env.max_steps",
    "env.rollout.n",
    "actor_rollout_ref.actor.use_invalid_action_penalty",
    "actor_rollout_ref.actor.invalid_action_penalty_coef",
}
"""Keys of verl-agent's config that verl 0.9.1's lacks (``++``), for every method."""
BOTH_WAYS = {"trainer.use_v1"}
"""A verl 0.9.1 key that verl-agent's config lacks (``++`` too): the plugin needs the legacy trainer."""
GIGPO_KEYS = {"algorithm.gigpo.step_advantage_w", "algorithm.gigpo.mode"}
"""verl-agent's own GiGPO options, written for the methods with anchor groups (gigpo, gaca), equal to theirs."""
CASES = [(method, family) for method in ("grpo", "gigpo", "gaca") for family in ("household", "shop")]


def job_for(method: str, family: str, *extra: str):
    run, resolved = compose_run(*PAPER, f"algorithm={method}", f"env={family}", *extra)
    return run, build_job(run, run_key(resolved), "sqlite:///mlflow.db", "0123abcd", launcher_gpus=4)


@functools.cache
def composed(overrides: tuple[str, ...]):
    return compose_verl(list(overrides))


@functools.cache
def parsed(text: str):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_override(text)


def has_key(config, dotted: str) -> bool:
    """Whether ``dotted`` is a key of ``config``, also when its value is mandatory (``???``)."""
    node = config
    for part in dotted.split("."):
        if not OmegaConf.is_dict(node) or part not in node.keys():
            return False
        node = node._get_node(part)
    return True


def plain(node):
    return OmegaConf.to_container(node) if OmegaConf.is_config(node) else node


@pytest.mark.parametrize(("method", "family"), CASES)
def test_every_override_composes_with_verls_own_config_and_reads_back(method, family):
    _, job = job_for(method, family)
    defaults = composed(())
    config = composed(job.overrides)
    forced, added = set(), set()
    for text in job.overrides:
        override = parsed(text)
        key = override.key_or_group
        in_verl = has_key(defaults, key)
        if text.startswith("++"):
            forced.add(key)
            assert in_verl == (key in BOTH_WAYS), f"{key}: in verl 0.9.1's config: {in_verl}"
        elif text.startswith("+"):
            added.add(key)
            assert not in_verl, key
        else:
            assert in_verl, f"{key} is not a key of verl 0.9.1's ppo_trainer.yaml"
        assert plain(OmegaConf.select(config, key)) == override.value(), text
    assert forced == VERL_AGENT_KEYS | BOTH_WAYS | (GIGPO_KEYS if method != "grpo" else set())
    options = [*AdvantageConfig.__dataclass_fields__, "invalid_action_penalty"]
    assert added == {f"algorithm.gaca.{name}" for name in options}


@pytest.mark.parametrize(("method", "family"), CASES)
def test_gacas_verl_plugin_reads_exactly_the_runs_estimator_from_the_composed_config(method, family):
    from gaca.backends.verl.agent.options import ESTIMATOR_METHODS, plugin_options

    assert verl_names() == {method: name for name, method in ESTIMATOR_METHODS.items()}
    run, job = job_for(method, family, "algorithm.gamma=0.9", "env.invalid_penalty=0.2")
    config = composed(job.overrides)
    estimator, rewards = plugin_options(config.algorithm, config.algorithm.adv_estimator)
    assert estimator == run.algorithm and rewards.invalid_action_penalty == 0.2
    assert config.algorithm.gamma == 0.9 and config.trainer.use_v1 is False


@pytest.mark.parametrize(
    ("family", "horizon", "prompt_length", "micro_batch"), [("household", 50, 2048, 32), ("shop", 15, 4096, 8)]
)
def test_the_paper_preset_lands_on_the_keys_verl_agent_reads(family, horizon, prompt_length, micro_batch):
    run, job = job_for("gaca", family)
    config = composed(job.overrides)
    expected = {
        "actor_rollout_ref.model.path": MODEL,
        "env.rollout.n": 8,  # the group: verl-agent keeps actor_rollout_ref.rollout.n at 1
        "actor_rollout_ref.rollout.n": 1,
        "data.train_batch_size": 16,
        "actor_rollout_ref.actor.optim.lr": 1e-6,
        "actor_rollout_ref.actor.use_kl_loss": True,
        "actor_rollout_ref.actor.kl_loss_coef": 0.01,
        "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
        "algorithm.gamma": 0.95,
        "env.max_steps": horizon,
        "data.max_response_length": 512,
        "data.max_prompt_length": prompt_length,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": micro_batch,
        "trainer.total_training_steps": 150,
        "trainer.total_epochs": 150,
        "trainer.test_freq": 5,
        "trainer.val_before_train": True,
        "actor_rollout_ref.rollout.val_kwargs.temperature": 0.4,
        "actor_rollout_ref.rollout.val_kwargs.do_sample": True,
        "actor_rollout_ref.actor.use_invalid_action_penalty": True,
        "actor_rollout_ref.actor.invalid_action_penalty_coef": 0.1,
        "trainer.n_gpus_per_node": 4,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 4,
        "data.val_batch_size": 128,
        "algorithm.adv_estimator": "gaca",
        "trainer.use_v1": False,
        "trainer.logger": ["console", "mlflow"],
        "trainer.project_name": "gaca",
        "env.env_name": "alfworld/AlfredTWEnv" if family == "household" else "Webshop",
    }
    assert {key: plain(OmegaConf.select(config, key)) for key in expected} == expected
    options = plain(config.algorithm.gaca)
    assert options.pop("invalid_action_penalty") == 0.1
    assert AdvantageConfig.from_dict(options) == run.algorithm
    assert job.env["MLFLOW_RUN_ID"] == "0123abcd" and job.env["MLFLOW_TRACKING_URI"] == "sqlite:///mlflow.db"


def test_every_value_is_overridable_and_backend_overrides_win():
    _, job = job_for(
        "gigpo",
        "household",
        "trainer.lr=3e-6",
        "trainer.group_size=4",
        "env.horizon=30",
        "backend.gpus_per_node=2",
        "backend.tensor_parallel_size=1",
        "algorithm.step_weight=0.5",
        "algorithm.norm=mean",
        "backend.overrides=['actor_rollout_ref.rollout.gpu_memory_utilization=0.45','++env.history_length=3']",
    )
    config = composed(job.overrides)
    expected = {
        "actor_rollout_ref.actor.optim.lr": 3e-6,
        "env.rollout.n": 4,
        "env.max_steps": 30,
        "trainer.n_gpus_per_node": 2,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
        "algorithm.gigpo.step_advantage_w": 0.5,
        "algorithm.gigpo.mode": "mean_norm",
        "algorithm.norm_adv_by_std_in_grpo": False,
        "algorithm.gaca.norm": "mean",
        "actor_rollout_ref.rollout.gpu_memory_utilization": 0.45,
        "env.history_length": 3,
    }
    assert {key: plain(OmegaConf.select(config, key)) for key in expected} == expected


@pytest.mark.parametrize(("method", "family"), CASES)
def test_verls_typed_configs_accept_the_values(method, family):
    """verl's trainer hands estimators the raw ``algorithm`` DictConfig (extra nodes included) and
    never builds its typed AlgoConfig from it, which would reject the extra ``gaca`` node; the
    typed class checks the rest."""
    from verl.utils.config import omega_conf_to_dataclass

    _, job = job_for(method, family)
    config = composed(job.overrides)
    algorithm = omega_conf_to_dataclass(without(config.algorithm, "gaca", "gigpo"))
    assert (algorithm.adv_estimator, algorithm.gamma) == (verl_names()[method], 0.95)
    actor = omega_conf_to_dataclass(verl_actor_section(config))
    assert (actor.kl_loss_type, actor.kl_loss_coef, actor.optim.lr, actor.clip_ratio_c) == (
        "low_var_kl",
        0.01,
        1e-6,
        3.0,
    )


def test_verls_validate_config_accepts_the_job_but_for_the_step_row_minibatch():
    """verl 0.9.1 counts the PPO mini-batch in prompts (it must not exceed the 16 tasks of a batch);
    verl-agent counts step rows, of which a batch of 16 tasks x 8 rollouts has hundreds, and its
    scripts use 256. That rule is the one verl 0.9.1 rejects; with the mini-batch in prompts the
    whole config passes verl's own validation."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    _, job = job_for("gaca", "household")
    config = composed(job.overrides).copy()
    with open_dict(config):
        config.actor_rollout_ref.actor = verl_actor_section(config)
    with pytest.raises(ValueError, match=r"train_batch_size \(16\) must be >= actor.ppo_mini_batch_size \(256\)"):
        validate_config(config, need_reference_policy(config), need_critic(config))
    config.actor_rollout_ref.actor.ppo_mini_batch_size = config.data.train_batch_size
    validate_config(config, need_reference_policy(config), need_critic(config))


def test_hydra_values_parse_back_exactly():
    for value in (
        "~/data/verl-agent/text",
        "a b",
        "it's",
        "1.5",
        "true",
        "null",
        "/m/Qwen2.5-7B-Instruct",
        1e-6,
        0.95,
        True,
        None,
        ["console", "mlflow"],
    ):
        assert parsed(f"key={hydra_value(value)}").value() == value


def verl_actor_section(config):
    """The actor section without verl-agent's invalid-action keys, which verl 0.9.1's typed
    FSDPActorConfig rejects as unknown (verl-agent's trainer reads them instead)."""
    return without(config.actor_rollout_ref.actor, "use_invalid_action_penalty", "invalid_action_penalty_coef")


def without(node, *keys: str):
    copy = node.copy()
    with open_dict(copy):
        for key in keys:
            copy.pop(key, None)
    return copy
