"""The ``paper`` preset equals verl-agent's public GiGPO recipes wherever the paper is silent, for each
family from the same command (``conf/trainer/paper.yaml`` and, for WebShop, ``conf/recipe/``).

``RECIPES`` records, per verl key, the value each recipe runs with and where it comes from:
``examples/gigpo_trainer/run_alfworld.sh`` / ``run_webshop.sh`` of verl-agent (upstream 796ed31), or
its ``verl/trainer/config/ppo_trainer.yaml`` where the scripts set nothing. It is an independent
record of those files (numbers, not their code), so that the preset is checked against it rather
than against itself. The generated job's overrides are parsed with Hydra's own override parser.
"""

from __future__ import annotations

import pytest

from gaca.backends.verl.launcher.job import build_job
from gaca.tracking.identity import run_key

from .conftest import PAPER, compose_run

ALFWORLD_SH = "examples/gigpo_trainer/run_alfworld.sh"
WEBSHOP_SH = "examples/gigpo_trainer/run_webshop.sh"
CONFIG = "verl/trainer/config/ppo_trainer.yaml (default)"
BOTH = f"{ALFWORLD_SH}, {WEBSHOP_SH}"

RECIPES: dict[str, tuple[object, object, str]] = {
    # key: (ALFWorld, WebShop, source)
    "data.train_batch_size": (16, 16, BOTH),
    "data.val_batch_size": (128, 128, BOTH),
    "data.max_prompt_length": (2048, 4096, BOTH),
    "data.max_response_length": (512, 512, BOTH),
    "data.filter_overlong_prompts": (True, True, BOTH),
    "data.truncation": ("error", "error", BOTH),
    "data.return_raw_chat": (True, True, BOTH),
    "actor_rollout_ref.actor.optim.lr": (1e-6, 1e-6, BOTH),
    "actor_rollout_ref.model.use_remove_padding": (True, True, BOTH),
    "actor_rollout_ref.actor.ppo_mini_batch_size": (256, 64, BOTH),
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": (32, 8, BOTH),
    "actor_rollout_ref.actor.use_kl_loss": (True, True, BOTH),
    "actor_rollout_ref.actor.kl_loss_coef": (0.01, 0.01, BOTH),
    "actor_rollout_ref.actor.kl_loss_type": ("low_var_kl", "low_var_kl", BOTH),
    "actor_rollout_ref.model.enable_gradient_checkpointing": (True, True, BOTH),
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": (32, 16, BOTH),
    "actor_rollout_ref.rollout.name": ("vllm", "vllm", BOTH),
    "actor_rollout_ref.rollout.gpu_memory_utilization": (0.6, 0.6, BOTH),
    "actor_rollout_ref.rollout.enable_chunked_prefill": (False, False, BOTH),
    "actor_rollout_ref.rollout.enforce_eager": (False, False, BOTH),
    "actor_rollout_ref.rollout.free_cache_engine": (False, False, BOTH),
    "actor_rollout_ref.rollout.val_kwargs.temperature": (0.4, 0.4, BOTH),
    "actor_rollout_ref.rollout.val_kwargs.do_sample": (True, True, BOTH),
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": (32, 16, BOTH),
    "actor_rollout_ref.ref.fsdp_config.param_offload": (True, True, BOTH),
    "actor_rollout_ref.actor.use_invalid_action_penalty": (True, True, BOTH),
    "actor_rollout_ref.actor.invalid_action_penalty_coef": (0.1, 0.1, BOTH),
    "algorithm.use_kl_in_reward": (False, False, BOTH),
    "algorithm.gamma": (0.95, 0.95, BOTH),
    "algorithm.gigpo.step_advantage_w": (1.0, 1.0, BOTH),
    "algorithm.gigpo.mode": ("mean_std_norm", "mean_norm", BOTH),
    "env.env_name": ("alfworld/AlfredTWEnv", "Webshop", BOTH),
    "env.seed": (0, 0, BOTH),
    "env.max_steps": (50, 15, BOTH),
    "env.rollout.n": (8, 8, BOTH),
    "trainer.critic_warmup": (0, 0, BOTH),
    "trainer.test_freq": (5, 5, BOTH),
    "trainer.total_epochs": (150, 150, BOTH),
    "trainer.val_before_train": (True, True, BOTH),
    "actor_rollout_ref.rollout.n": (1, 1, CONFIG + "; verl-agent's main_ppo asserts it"),
    "actor_rollout_ref.actor.ppo_epochs": (1, 1, CONFIG),
    "actor_rollout_ref.actor.clip_ratio": (0.2, 0.2, CONFIG),
    "actor_rollout_ref.actor.clip_ratio_low": (0.2, 0.2, CONFIG),
    "actor_rollout_ref.actor.clip_ratio_high": (0.2, 0.2, CONFIG),
    "actor_rollout_ref.actor.clip_ratio_c": (3.0, 3.0, CONFIG),
    "actor_rollout_ref.actor.entropy_coeff": (0.001, 0.001, CONFIG),
    "actor_rollout_ref.actor.optim.weight_decay": (0.01, 0.01, CONFIG),
    "actor_rollout_ref.actor.grad_clip": (1.0, 1.0, CONFIG),
    "actor_rollout_ref.rollout.temperature": (1.0, 1.0, CONFIG),
}
GRPO_RECIPE: dict[str, object] = {
    "algorithm.norm_adv_by_std_in_grpo": True,
    "actor_rollout_ref.actor.ppo_mini_batch_size": 64,
}
"""verl-agent's GRPO WebShop recipe (examples/grpo_trainer/run_webshop.sh) where it differs from the
GiGPO one: it keeps the std (its config
default) and has no GiGPO options; the mini-batch is WebShop's 64 in both."""
ENVIRONMENT = {"VLLM_ATTENTION_BACKEND": ("XFORMERS", "XFORMERS")}
"""Variables both GiGPO scripts export."""
MAX_USER_PROCESSES = (None, 65536)
"""``ulimit -u`` of the scripts: WebShop's only."""
DATA_DIRS = ("~/data/verl-agent/text", "~/data/verl-agent/webshop/text")
"""The preset's data folders. Each GiGPO script prepares its own test.parquet (``--val_data_size``:
ALFWorld 128 rows, WebShop ``val_data_size * 2`` = 256, both validated in batches of
``data.val_batch_size`` = 128) in the same folder; the preset keeps WebShop's beside ALFWorld's so
that both exist at once."""
FAMILIES = ("household", "shop")


def job_values(method: str, family: str, *extra: str) -> dict[str, object]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    run, resolved = compose_run(*PAPER, f"algorithm={method}", f"env={family}", *extra)
    job = build_job(run, run_key(resolved), "sqlite:///mlflow.db", "0123abcd", launcher_gpus=2)
    parser = OverridesParser.create()
    values = {}
    for text in job.overrides:
        override = parser.parse_override(text)
        values[override.key_or_group] = override.value()
    return values


def expected(column: int) -> dict[str, object]:
    return {key: row[column] for key, row in RECIPES.items()}


@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_the_paper_preset_runs_the_alfworld_recipe_key_by_key(method):
    values = job_values(method, "household")
    recipe = expected(0)
    if method == "grpo":  # verl-agent's own GiGPO options are written only where its GiGPO would read them
        recipe = {key: value for key, value in recipe.items() if not key.startswith("algorithm.gigpo.")}
    assert {key: values.get(key) for key in recipe} == recipe
    assert values["algorithm.gaca.norm"] == "mean_std" and values["algorithm.norm_adv_by_std_in_grpo"] is True


@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_the_paper_preset_runs_the_webshop_recipe_by_itself(method):
    recipe = expected(1)
    if method == "grpo":  # gaca_grpo follows verl-agent's GRPO WebShop recipe
        recipe = {key: value for key, value in recipe.items() if not key.startswith("algorithm.gigpo.")}
        recipe.update(GRPO_RECIPE)
    values = job_values(method, "shop")
    assert {key: values.get(key) for key in recipe} == recipe
    norm = "mean_std" if method == "grpo" else "mean"  # the estimator's norm follows its recipe's
    assert values["algorithm.gaca.norm"] == norm
    assert ("algorithm.gigpo.mode" in values) == (method != "grpo")


@pytest.mark.parametrize(("column", "family"), list(enumerate(FAMILIES)))
@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_each_family_gets_its_recipes_data_folder_processes_and_variables(column, family, method):
    from pathlib import Path

    run, resolved = compose_run(*PAPER, f"algorithm={method}", f"env={family}")
    job = build_job(run, run_key(resolved), "sqlite:///mlflow.db", "0123abcd", launcher_gpus=2)
    assert run.backend.options.data_dir == DATA_DIRS[column]
    assert job_values(method, family)["data.val_files"] == str(Path(DATA_DIRS[column]).expanduser() / "test.parquet")
    assert {name: job.env.get(name) for name in ENVIRONMENT} == {
        name: values[column] for name, values in ENVIRONMENT.items()
    }
    assert job.max_user_processes == MAX_USER_PROCESSES[column]
    assert ("ulimit -u 65536 &&" in job.shell()) == (family == "shop")


def test_the_two_families_differ_exactly_where_their_recipes_do():
    for method in ("gigpo", "gaca"):
        household, shop = job_values(method, "household"), job_values(method, "shop")
        recipe_differs = {key for key, (alfworld, webshop, _) in RECIPES.items() if alfworld != webshop}
        differing = {key for key in RECIPES if household.get(key) != shop.get(key)}
        assert differing == recipe_differs
    assert {key for key, (a, w, _) in RECIPES.items() if a != w} >= {
        "actor_rollout_ref.actor.ppo_mini_batch_size",
        "algorithm.gigpo.mode",
    }


def test_the_command_line_still_wins_over_the_family_recipe():
    values = job_values("gigpo", "shop", "trainer.minibatch_size=32", "algorithm.norm=mean_std", "backend.data_dir=/d")
    assert values["actor_rollout_ref.actor.ppo_mini_batch_size"] == 32
    assert (values["algorithm.gigpo.mode"], values["algorithm.gaca.norm"]) == ("mean_std_norm", "mean_std")
    assert values["data.val_files"] == "/d/test.parquet"


def test_paper_scale_runs_use_verl_agents_conventions_and_cpu_runs_the_spec():
    assert job_values("gaca", "household")["algorithm.gaca.conventions"] == "verl_agent"
    assert compose_run("algorithm=gigpo")[0].algorithm.conventions == "spec"
    run, _ = compose_run(*PAPER, "algorithm=gigpo", "algorithm.conventions=spec")
    assert run.algorithm.conventions == "spec"  # still a choice
