"""The plugin inside verl 0.9.1: its registry, its own compute_advantage, its config, its entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

pytest.importorskip("verl")
pytestmark = pytest.mark.verl

import verl  # noqa: E402  (loads gaca's plugin through the verl.plugins entry point)
from verl.trainer.ppo import core_algos, ray_trainer  # noqa: E402

from gaca.backends.verl.agent.advantage import DIAGNOSTICS_KEY  # noqa: E402
from gaca.backends.verl.agent.registration import ADV_ESTIMATORS, register_estimators  # noqa: E402
from gaca.estimators import AdvantageConfig  # noqa: E402

METHODS = {"gaca": "gaca", "gigpo": "gigpo", "gaca_grpo": "grpo"}


def algorithm(estimator: str, **options: object) -> OmegaConf:
    """verl's ``algorithm`` node as the legacy trainer passes it (a DictConfig), with the recipes' gamma,
    which the estimator follows (its ``algorithm.gaca.gamma``)."""
    node = {"adv_estimator": estimator, "gamma": 0.95, "lam": 1.0, "norm_adv_by_std_in_grpo": True}
    if options:
        node["gaca"] = options
    return OmegaConf.create(node)


def run_verl(data, estimator: str, config=None):
    """verl's own ray_trainer.compute_advantage, as RayPPOTrainer.fit calls it."""
    return ray_trainer.compute_advantage(
        data,
        adv_estimator=estimator,
        gamma=1.0,
        lam=1.0,
        num_repeat=4,
        norm_adv_by_std_in_grpo=True,
        config=algorithm(estimator) if config is None else config,
    )


@pytest.mark.parametrize("estimator", ["gaca", "gigpo", "gaca_grpo"])
def test_verl_compute_advantage_gives_the_estimator_broadcast_over_the_mask(layout_batch, estimator):
    batch = layout_batch(num_tasks=3, group_size=4, max_steps=6, seed=1)
    expected = batch.reference(AdvantageConfig(method=METHODS[estimator]))
    mask = batch.data.batch["response_mask"].bool()

    out = run_verl(batch.data, estimator)

    advantages = out.batch["advantages"]
    assert torch.equal(advantages, expected)
    assert torch.equal(out.batch["returns"], advantages)
    assert (advantages[~mask] == 0).all()
    assert (advantages[mask] != 0).float().mean() > 0.5  # the comparison is not between zeros
    assert ("diag/nonsingleton_frac" in out.meta_info[DIAGNOSTICS_KEY]) == (estimator != "gaca_grpo")


def test_gaca_differs_from_gigpo_and_reports_gate_diagnostics(layout_batch):
    gaca = run_verl(layout_batch(seed=2).data, "gaca")
    gigpo = run_verl(layout_batch(seed=2).data, "gigpo")
    assert not torch.allclose(gaca.batch["advantages"], gigpo.batch["advantages"])
    diag = gaca.meta_info[DIAGNOSTICS_KEY]
    assert 0 < diag["diag/lambda_mean"] < 1 and diag["diag/criticality_std"] > 0


def test_options_under_algorithm_gaca_reach_the_estimator_through_verls_config(layout_batch):
    from hydra import compose, initialize_config_dir

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    overrides = ["algorithm.adv_estimator=gaca", "+algorithm.gaca.lambda0=0.25", "+algorithm.gaca.alpha_lambda=0"]
    with initialize_config_dir(str(config_dir), version_base=None):
        config = compose("ppo_trainer", overrides=overrides)

    changed = run_verl(layout_batch(seed=3).data, "gaca", config.algorithm).batch["advantages"]
    default = run_verl(layout_batch(seed=3).data, "gaca").batch["advantages"]

    # verl's own algorithm.gamma (1.0 in its ppo_trainer.yaml) is the estimator's gamma too
    expected = layout_batch(seed=3).reference(AdvantageConfig(lambda0=0.25, alpha_lambda=0.0, gamma=1.0))
    assert torch.equal(changed, expected)
    assert not torch.allclose(changed, default)


@pytest.mark.parametrize("penalty", [0.0, 0.5])
def test_invalid_action_penalty_option_sets_the_step_reward(layout_batch, penalty):
    out = run_verl(layout_batch(seed=3).data, "gigpo", algorithm("gigpo", invalid_action_penalty=penalty))
    expected = layout_batch(seed=3).reference(AdvantageConfig(method="gigpo"), penalty=penalty)
    assert torch.equal(out.batch["advantages"], expected)


def test_unknown_option_names_the_key_and_lists_the_allowed_ones(layout_batch):
    with pytest.raises(ValueError, match=r"algorithm\.gaca\.lamda0.*allowed: .*lambda0"):
        run_verl(layout_batch().data, "gaca", algorithm("gaca", lamda0=0.3))


def test_bad_option_value_names_the_key(layout_batch):
    with pytest.raises(ValueError, match=r"algorithm\.gaca\.lambda0 must be in \[0, 1\], got 2"):
        run_verl(layout_batch().data, "gaca", algorithm("gaca", lambda0=2))


def test_method_is_chosen_by_adv_estimator(layout_batch):
    with pytest.raises(
        ValueError, match=r"algorithm\.gaca\.method='grpo' contradicts algorithm\.adv_estimator='gigpo'"
    ):
        run_verl(layout_batch().data, "gigpo", algorithm("gigpo", method="grpo"))


@pytest.mark.parametrize(
    ("estimator", "field", "where"),
    [
        ("gaca", "uid", "non_tensor"),
        ("gaca", "traj_uid", "non_tensor"),
        ("gigpo", "rewards", "non_tensor"),
        ("gigpo", "anchor_obs", "non_tensor"),
        ("gaca", "old_log_probs", "tensor"),
    ],
)
def test_missing_field_names_it_and_the_rollout_that_provides_it(layout_batch, estimator, field, where):
    data = layout_batch().data
    if where == "tensor":
        data.batch.pop(field)
    else:
        data.non_tensor_batch.pop(field)
    provider = "compute_log_prob" if field == "old_log_probs" else "TrajectoryCollector"
    with pytest.raises(ValueError, match=rf"no \w+\['{field}'\].*{provider}"):
        run_verl(data, estimator)


def test_gaca_grpo_needs_no_anchor_and_uniform_gaca_needs_no_log_probs(layout_batch):
    batch = layout_batch(seed=4)
    expected = batch.reference(AdvantageConfig(method="grpo"))
    batch.data.non_tensor_batch.pop("anchor_obs")
    assert torch.equal(run_verl(batch.data, "gaca_grpo").batch["advantages"], expected)

    batch = layout_batch(seed=4)
    expected = batch.reference(AdvantageConfig(detector="uniform"))
    batch.data.batch.pop("old_log_probs")
    out = run_verl(batch.data, "gaca", algorithm("gaca", detector="uniform"))
    assert torch.equal(out.batch["advantages"], expected)


def test_registered_estimator_called_without_the_batch_says_how_to_get_it(layout_batch):
    data = layout_batch().data
    estimator = core_algos.get_adv_estimator_fn("gaca")
    with pytest.raises(RuntimeError, match=r"trainer\.use_v1=false.*compute_batch_advantages"):
        estimator(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            config=algorithm("gaca"),
            index=data.non_tensor_batch["uid"],
        )


def test_verls_own_estimators_are_untouched_and_registration_is_idempotent():
    assert core_algos.get_adv_estimator_fn("grpo") is core_algos.compute_grpo_outcome_advantage
    register_estimators(core_algos)
    for name, estimator in ADV_ESTIMATORS.items():
        assert core_algos.get_adv_estimator_fn(name) is estimator


def test_name_clash_in_verls_registry_is_reported_and_nothing_is_registered(monkeypatch):
    def someone_elses_gigpo(token_level_rewards, response_mask, **kwargs):
        return token_level_rewards, token_level_rewards

    registry = core_algos.ADV_ESTIMATOR_REGISTRY
    monkeypatch.setitem(registry, "gigpo", someone_elses_gigpo)
    monkeypatch.delitem(registry, "gaca")
    with pytest.raises(
        ValueError, match=r"already has 'gigpo' \(registered by .*someone_elses_gigpo\).*VERL_USE_EXTERNAL_PLUGINS"
    ):
        register_estimators(core_algos)
    assert "gaca" not in registry and registry["gigpo"] is someone_elses_gigpo


def test_import_verl_in_a_fresh_process_loads_the_plugin_through_the_entry_point():
    script = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "print([ep.value for ep in entry_points(group='verl.plugins') if ep.name == 'gaca'])\n"
        "import verl\n"
        "print('gaca.backends.verl.agent.plugin' in sys.modules)\n"
        "from verl.trainer.ppo import core_algos, ray_trainer\n"
        "print(sorted(n for n in ('gaca', 'gigpo', 'gaca_grpo') if n in core_algos.ADV_ESTIMATOR_REGISTRY))\n"
        "print(getattr(ray_trainer.compute_advantage, 'holds_batch_for_gaca', False))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "VERL_USE_EXTERNAL_PLUGINS"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:4] == [
        "['gaca.backends.verl.agent.plugin']",
        "True",
        "['gaca', 'gaca_grpo', 'gigpo']",
        "True",
    ]
