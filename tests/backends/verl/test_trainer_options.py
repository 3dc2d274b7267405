"""No silent settings: verl-agent's own estimator options (``algorithm.gigpo.*``, ``algorithm.gamma``,
``algorithm.norm_adv_by_std_in_grpo``, the actor's invalid-action penalty, ...) are honoured through
their ``algorithm.gaca.*`` equivalent or refused in one line naming it: at the advantage step, in
``gaca train backend=verl`` (before any MLflow run exists) and in ``python -m
gaca.backends.verl.agent.main`` run by hand (exit 2, before Ray starts).

The hand-run tests compose verl-agent's ``verl/trainer/config/ppo_trainer.yaml``: a stand-in with its
defaults (upstream 796ed31) in a stand-in checkout, and the real one when ``GACA_VERL_AGENT``
names a verl-agent checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from gaca.backends.verl.agent.options import command_line_problem, plugin_options
from gaca.estimators import AdvantageConfig

from ...orchestration.conftest import gaca
from .fake_verl_agent import write_checkout

CHECKOUT_VARIABLE = "GACA_VERL_AGENT"
VERL_AGENT_DEFAULTS = """\
algorithm:
  gamma: 1.0
  lam: 1.0
  adv_estimator: gae
  norm_adv_by_std_in_grpo: True
  use_kl_in_reward: False
  gigpo:
    step_advantage_w: 1.0
    mode: "mean_norm"
    enable_similarity: False
    similarity_thresh: 0.95
actor_rollout_ref:
  actor:
    use_invalid_action_penalty: True
    invalid_action_penalty_coef: 0.1
"""
"""The keys of verl-agent's ppo_trainer.yaml that the check reads, with its defaults (numbers only)."""


def options(estimator: str, **node: object) -> AdvantageConfig:
    return plugin_options(OmegaConf.create(node), estimator)[0]


def test_verl_agents_gigpo_options_are_honoured_where_algorithm_gaca_is_silent(layout_batch):
    pytest.importorskip("verl")
    from gaca.backends.verl.agent.advantage import compute_batch_advantages
    from gaca.backends.verl.agent.batch import add_step_index

    node = {"gamma": 0.9, "gigpo": {"mode": "mean_norm", "step_advantage_w": 0.5, "enable_similarity": False}}
    assert options("gigpo", **node) == AdvantageConfig(method="gigpo", gamma=0.9, norm="mean", step_weight=0.5)
    assert options("gaca", **node) == AdvantageConfig(gamma=0.9, norm="mean", step_weight=0.5)
    batch = layout_batch(num_tasks=3, group_size=4, max_steps=6, seed=21)
    add_step_index(batch.data)
    out = compute_batch_advantages(batch.data, "gigpo", OmegaConf.create(node)).batch["advantages"]
    expected = batch.reference(AdvantageConfig(method="gigpo", gamma=0.9, norm="mean", step_weight=0.5))
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert (out - batch.reference(AdvantageConfig(method="gigpo", gamma=0.9))).abs().max() > 0.1  # they matter


def test_gaca_grpo_honours_norm_adv_by_std_in_grpo_and_reads_no_gigpo_option():
    assert options("gaca_grpo", norm_adv_by_std_in_grpo=False).norm == "mean"
    assert options("gaca_grpo", norm_adv_by_std_in_grpo=True).norm == "mean_std"
    # verl-agent's GRPO reads neither gamma nor algorithm.gigpo.*: nor does gaca_grpo
    grpo = options(
        "gaca_grpo", gamma=0.5, gigpo={"mode": "mean_norm", "step_advantage_w": 0.0}, gaca={"norm": "mean_std"}
    )
    assert grpo == AdvantageConfig(method="grpo")


@pytest.mark.parametrize(
    ("estimator", "node", "message"),
    [
        (
            "gigpo",
            {"gigpo": {"mode": "mean_norm"}, "gaca": {"norm": "mean_std"}},
            r"^algorithm\.gigpo\.mode=mean_norm contradicts algorithm\.gaca\.norm=mean_std, which 'gigpo' reads: "
            r"set algorithm\.gaca\.norm=mean \(algorithm\.norm in a run config\) or "
            r"algorithm\.gigpo\.mode=mean_std_norm$",
        ),
        (
            "gaca",
            {"gigpo": {"step_advantage_w": 0.5}, "gaca": {"step_weight": 1.0}},
            r"algorithm\.gigpo\.step_advantage_w=0\.5 contradicts algorithm\.gaca\.step_weight=1\.0.*set "
            r"algorithm\.gaca\.step_weight=0\.5",
        ),
        (
            "gaca_grpo",
            {"norm_adv_by_std_in_grpo": False, "gaca": {"norm": "mean_std"}},
            r"algorithm\.norm_adv_by_std_in_grpo=false contradicts algorithm\.gaca\.norm=mean_std.*set "
            r"algorithm\.gaca\.norm=mean",
        ),
        (
            "gigpo",
            {"gamma": 1.0, "gaca": {"gamma": 0.95}},
            r"algorithm\.gamma=1\.0 contradicts algorithm\.gaca\.gamma=0\.95",
        ),
        (
            "gigpo",
            {"gigpo": {"mode": "mean_only"}},
            r"algorithm\.gigpo\.mode='mean_only' is not one of verl-agent's values",
        ),
        (
            "gaca",
            {"gigpo": {"enable_similarity": True}},
            r"algorithm\.gigpo\.enable_similarity=true would be ignored by 'gaca': gaca's anchor groups are exact "
            r"matches",
        ),
        ("gaca_grpo", {"use_kl_in_reward": True}, r"algorithm\.use_kl_in_reward=true would be ignored by 'gaca_grpo'"),
    ],
)
def test_an_option_the_hooks_would_ignore_is_refused_naming_the_algorithm_gaca_key(estimator, node, message):
    with pytest.raises(ValueError, match=message) as error:
        options(estimator, **node)
    assert "\n" not in str(error.value)


def test_gaca_train_refuses_an_ignored_override_before_any_mlflow_run_exists(tmp_path: Path):
    result = gaca(
        "train",
        "backend=verl",
        "trainer=paper",
        "model=path",
        "model.path=/models/Qwen2.5-1.5B-Instruct",
        "env=shop",
        "algorithm=gigpo",
        "backend.overrides=['++algorithm.gigpo.mode=mean_std_norm','++algorithm.gigpo.step_advantage_w=0.5']",
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("gaca train: invalid config: backend.overrides: algorithm.gigpo.")
    assert "set algorithm.gaca." in lines[0] and "in a run config" in lines[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # no mlflow.db, no runs/


def test_gaca_train_refuses_another_invalid_action_penalty_for_verl_agent(tmp_path: Path):
    result = gaca(
        "train",
        "backend=verl",
        "trainer=paper",
        "model=path",
        "model.path=/m/Qwen",
        "env=household",
        "algorithm=gaca",
        "backend.overrides=['++actor_rollout_ref.actor.invalid_action_penalty_coef=0.2']",
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "set algorithm.gaca.invalid_action_penalty=0.2 (env.invalid_penalty in a run config)" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def checkouts(tmp_path: Path) -> list[Path]:
    standin = write_checkout(tmp_path / "standin")
    (standin / "verl/trainer/config").mkdir(parents=True)
    (standin / "verl/trainer/config/ppo_trainer.yaml").write_text(VERL_AGENT_DEFAULTS)
    real = os.environ.get(CHECKOUT_VARIABLE)
    return [standin, *([Path(real)] if real else [])]


HAND_RUNS = [
    (
        ["algorithm.adv_estimator=gigpo", "algorithm.gigpo.step_advantage_w=0.5", "+algorithm.gaca.step_weight=1.0"],
        "algorithm.gaca.step_weight",
    ),
    (["algorithm.adv_estimator=gaca", "algorithm.gigpo.enable_similarity=true"], "algorithm.gigpo.enable_similarity"),
    (
        [
            "algorithm.adv_estimator=gaca_grpo",
            "algorithm.norm_adv_by_std_in_grpo=false",
            "+algorithm.gaca.norm=mean_std",
        ],
        "algorithm.gaca.norm",
    ),
    (
        ["algorithm.adv_estimator=gigpo", "actor_rollout_ref.actor.use_invalid_action_penalty=false"],
        "algorithm.gaca.invalid_action_penalty=0.0",
    ),
]


@pytest.mark.parametrize(("overrides", "key"), HAND_RUNS)
def test_agent_main_by_hand_refuses_an_ignored_option_in_one_line_before_ray_starts(tmp_path: Path, overrides, key):
    for checkout in checkouts(tmp_path):
        env = {**os.environ, "PYTHONPATH": str(checkout), "RAY_DISABLE_USAGE_STATS": "1"}
        result = subprocess.run(
            [sys.executable, "-m", "gaca.backends.verl.agent.main", *overrides],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, (checkout, result.stderr[-2000:])
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gaca.backends.verl.agent.main: "), (checkout, lines)
        assert key in lines[0] and result.stdout == ""


def test_a_command_line_that_agrees_with_itself_passes_the_check(tmp_path: Path):
    for checkout in checkouts(tmp_path):
        assert (
            command_line_problem(
                checkout,
                [
                    "algorithm.adv_estimator=gigpo",
                    "algorithm.gigpo.mode=mean_std_norm",
                    "algorithm.gamma=0.95",
                    "+algorithm.gaca.norm=mean_std",
                ],
            )
            is None
        )
        assert (
            command_line_problem(checkout, ["algorithm.adv_estimator=grpo", "algorithm.gigpo.enable_similarity=true"])
            is None
        )
        problem = command_line_problem(checkout, ["algorithm.adv_estimator=gigpo", "+algorithm.gaca.norm=mean_std"])
        assert problem.startswith(
            "algorithm.gigpo.mode=mean_norm contradicts algorithm.gaca.norm=mean_std"
        )  # its default


@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_every_job_backend_verl_builds_passes_the_check_on_verl_agents_config(method):
    """The whole command line composes with verl-agent's own config (the stand-in has only the checked keys)."""
    from gaca.backends.verl.launcher.job import build_job
    from gaca.tracking.identity import run_key

    from .jobs.conftest import PAPER, compose_run

    if not os.environ.get(CHECKOUT_VARIABLE):
        pytest.skip(f"needs a verl-agent checkout: set {CHECKOUT_VARIABLE}=<its folder>")
    for family in ("household", "shop"):
        run, resolved = compose_run(*PAPER, f"algorithm={method}", f"env={family}")
        job = build_job(run, run_key(resolved), "sqlite:///mlflow.db", "0123abcd", launcher_gpus=2)
        assert command_line_problem(os.environ[CHECKOUT_VARIABLE], list(job.overrides)) is None, family
