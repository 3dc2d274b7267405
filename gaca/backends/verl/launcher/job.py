"""A run config as a verl training job: ``python -m gaca.backends.verl.agent.main`` (verl-agent's
``verl.trainer.main_ppo`` with gaca's hooks) with Hydra overrides, the environment the process
needs, and the folder it starts in.

The trainer is an unmodified verl-agent checkout (the public GiGPO code: a fork of verl whose trainer
adds the multi-turn environment loop that ALFWorld and WebShop need); ``gaca.backends.verl.agent.hooks``
makes it run gaca's estimators, named by ``algorithm.adv_estimator`` (gaca, gigpo, and gaca_grpo
for grpo, since ``grpo`` stays verl's own), their options under ``+algorithm.gaca.*``.

One command line composes with verl 0.9.1's ``ppo_trainer.yaml`` and with verl-agent's:

- ``key=value``: keys both configs have;
- ``++key=value`` (add the key, or set it where it exists): verl-agent's keys that verl 0.9.1 lacks
  (``env.*``, the invalid-action penalty, ``algorithm.gigpo.*``), and ``trainer.use_v1=false``, which
  verl-agent lacks and verl 0.9.1 needs for the plugin (only its legacy trainer lends an estimator
  the whole batch);
- ``+algorithm.gaca.<option>``: in neither (``+`` fails loudly if one had it).

Two of verl-agent's rules shape the values: it groups rollouts by ``env.rollout.n`` and asserts
``actor_rollout_ref.rollout.n == 1``; its PPO mini-batch counts step rows (one per agent step), as
``trainer.minibatch_size`` does, where verl 0.9.1 counts prompts.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gaca.backends.config import RunConfig
from gaca.backends.verl.agent.options import gigpo_options
from gaca.backends.verl.launcher.run_options import verl_environment, verl_options
from gaca.backends.verl.launcher.task_files import TRAIN_FILE, VAL_FILE
from gaca.estimators.registry import verl_names
from gaca.tracking.tags import run_name

TRAINER_MODULE = "gaca.backends.verl.agent.main"
"""Checks the verl-agent checkout, installs gaca's hooks, then runs its ``verl.trainer.main_ppo``."""
RUN_ID_PENDING = "<created or resumed by the job>"
"""``MLFLOW_RUN_ID`` as printed by ``--dry-run`` for a run MLflow does not hold yet."""


@dataclass(frozen=True)
class FamilyRecipe:
    """verl-agent's settings for one environment (its examples/gigpo_trainer scripts) that are not
    run config values; those (WebShop's mini-batch, GiGPO mode and data folder) are in
    ``conf/recipe/`` (composed for ``trainer=paper``)."""

    env_name: str
    """verl-agent's ``env.env_name``."""
    max_prompt_length: int
    micro_batch_size_per_gpu: int
    log_prob_micro_batch_size_per_gpu: int
    max_user_processes: int | None = None
    """The script's ``ulimit -u``: the trainer starts with at least this many processes allowed
    (as many as the hard limit allows); None: as inherited."""
    env_vars: Mapping[str, str] = field(default_factory=lambda: {"VLLM_ATTENTION_BACKEND": "XFORMERS"})
    """The variables the script exports (``backend.env_vars`` adds to them and wins)."""


ALFWORLD = FamilyRecipe("alfworld/AlfredTWEnv", 2048, 32, 32)
RECIPES: Mapping[str, FamilyRecipe] = {
    "household": ALFWORLD,
    "alfworld": ALFWORLD,
    "shop": FamilyRecipe("Webshop", 4096, 8, 16, max_user_processes=65536),
}
"""gaca env family -> the verl-agent environment a verl job plays instead."""

RECIPE_CONSTANTS: tuple[tuple[str, Any], ...] = (
    ("data.return_raw_chat", True),
    ("data.filter_overlong_prompts", True),
    ("data.truncation", "error"),
    ("actor_rollout_ref.model.use_remove_padding", True),
    ("actor_rollout_ref.model.enable_gradient_checkpointing", True),
    ("actor_rollout_ref.rollout.name", "vllm"),
    ("actor_rollout_ref.rollout.gpu_memory_utilization", 0.6),
    ("actor_rollout_ref.rollout.enable_chunked_prefill", False),
    ("actor_rollout_ref.rollout.enforce_eager", False),
    ("actor_rollout_ref.rollout.free_cache_engine", False),
    ("actor_rollout_ref.ref.fsdp_config.param_offload", True),
    ("algorithm.use_kl_in_reward", False),
    ("trainer.critic_warmup", 0),
)
"""verl-agent's script settings that no gaca option varies (``backend.overrides`` can change them)."""

CPU_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("actor_rollout_ref.rollout.name", "hf"),  # vLLM needs a GPU; verl's HF rollout runs on CPU
    ("actor_rollout_ref.rollout.tensor_model_parallel_size", 1),
    ("actor_rollout_ref.model.use_remove_padding", False),  # flash-attention's padding helpers need CUDA
    ("actor_rollout_ref.model.enable_gradient_checkpointing", False),
    ("trainer.n_gpus_per_node", 1),
    ("trainer.nnodes", 1),
)
"""What a job on a machine without CUDA sets in place of the GPU values (``backend.device``)."""
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Set to ``trainer.threads`` for a CPU job (a sweep launcher's cores per job; else torch's count here)."""
CPU_ADDED: tuple[tuple[str, Any], ...] = (
    ("ray_init.num_gpus", 1),  # one logical GPU for verl-agent's resource pool; CPU torch ignores it
    ("actor_rollout_ref.model.override_config._attn_implementation", "sdpa"),  # flash-attention is its default
    ("data.dataloader_num_workers", 0),  # its default 8 loader processes per loader, for one batch of rows
)
"""Keys verl-agent's config lacks that a CPU job adds (``++``)."""


FSDP_DTYPES: Mapping[str, str] = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
"""``model.dtype`` -> verl's precision name: a served policy (``backend.environment=gaca``) is loaded, rolled
out, scored and updated in it, as on the CPU backend (verl's FSDP default computes in bf16)."""


@dataclass(frozen=True)
class ServedFiles:
    """Where a job with gaca's environments (``backend.environment``) keeps what it makes before it starts."""

    policy: Path
    """The exported starting policy (model tiny or small): ``gaca.backends.verl.launcher.policy_export``."""
    data: Path
    """train.parquet and test.parquet: as many rows as a rollout has tasks (verl-agent counts them)."""
    output: Path
    """What the hooks hand back (per-step criticality counts), ``$GACA_OUTPUT_DIR``."""


def served_files(run: RunConfig, run_key: str) -> ServedFiles:
    root = Path(run.output_dir).resolve() / run_key
    return ServedFiles(root / "policy", root / "data", root / "gaca")


@dataclass(frozen=True)
class VerlJob:
    """One trainer process: ``command + overrides``, started in ``cwd`` with ``env`` added."""

    command: tuple[str, ...]
    overrides: tuple[str, ...]
    env: Mapping[str, str]
    """Variables set on top of the job's own environment."""
    cwd: str
    max_user_processes: int | None = None
    """``ulimit -u`` of the trainer: its soft limit of processes is raised to at least this (within the hard limit)."""

    @property
    def argv(self) -> list[str]:
        return [*self.command, *self.overrides]

    def raise_limits(self) -> None:
        """Raise the process limit as ``max_user_processes`` says (``preexec_fn`` of the trainer's process)."""
        if self.max_user_processes is None:
            return
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft != resource.RLIM_INFINITY and soft < self.max_user_processes:
            wanted = self.max_user_processes if hard == resource.RLIM_INFINITY else min(self.max_user_processes, hard)
            resource.setrlimit(resource.RLIMIT_NPROC, (wanted, hard))

    def shell(self) -> str:
        """The job as one shell command to copy: folder, limits, variables, command, one override per line."""
        limit = f" ulimit -u {self.max_user_processes} &&" if self.max_user_processes else ""
        lines = [f"cd {shell_word(self.cwd)} &&{limit} \\"]
        lines += [f"  {name}={shell_word(value)} \\" for name, value in self.env.items()]
        lines.append("  " + " ".join(shell_word(part) for part in self.command) + (" \\" if self.overrides else ""))
        lines += [
            f"    {shell_word(o)}" + (" \\" if i < len(self.overrides) - 1 else "")
            for i, o in enumerate(self.overrides)
        ]
        return "\n".join(lines)


def build_job(
    run: RunConfig,
    run_key: str,
    tracking_uri: str,
    run_id: str | None,
    launcher_gpus: int | None = None,
    cpu: bool | None = None,
) -> VerlJob:
    """The verl job of ``run`` (a validated ``backend=verl`` config).

    ``run_id`` is the MLflow run the job's metrics go to (None: not created yet, as in ``--dry-run``);
    ``launcher_gpus`` the launcher's ``gpus_per_node`` (used when ``backend.gpus_per_node`` is null);
    ``cpu`` whether it runs on CPU (None: ``backend.device`` is cpu; the job passes ``runs_on_cpu``).
    """
    from gaca.backends.verl.agent import cpu_patches
    from gaca.backends.verl.agent.env_manager import RUN_CONFIG_VARIABLE
    from gaca.backends.verl.agent.hooks import OUTPUT_VARIABLE

    backend = verl_options(run)
    cpu = backend.device == "cpu" if cpu is None else cpu
    command = tuple(backend.trainer_command or (trainer_python(run), "-m", TRAINER_MODULE))
    overrides = tuple(verl_overrides(run, run_key, gpus_per_node(run, launcher_gpus), cpu))
    env = {"MLFLOW_TRACKING_URI": tracking_uri, "MLFLOW_RUN_ID": run_id or RUN_ID_PENDING, "GACA_RUN_KEY": run_key}
    cwd = str(Path.cwd())
    paths = []
    if cpu:  # every process of the job runs the patches' sitecustomize at start-up
        paths.append(str(cpu_patches.SITE_DIR))
        env[cpu_patches.CPU_FLAG] = "1"
        # Ray refuses its one logical GPU where CUDA_VISIBLE_DEVICES lists none (the local sweep launcher
        # sets it empty); CPU torch ignores the variable.
        env["CUDA_VISIBLE_DEVICES"] = "0"
        if run.trainer.threads is not None:
            # torch in every process of the job (Ray workers inherit it) on the job's cores: without it each
            # worker takes every core of the node, and two jobs on one node slow each other down many times.
            env.update({name: str(run.trainer.threads) for name in THREAD_VARIABLES})
    if backend.verl_agent_dir:
        cwd = str(Path(backend.verl_agent_dir).expanduser().resolve())
        paths.append(cwd)  # Ray workers import verl-agent's packages (agent_system) from wherever they start
    if paths:
        inherited = os.environ.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([*paths, *([inherited] if inherited else [])])
    if verl_environment(run) == "gaca":
        served = {key: value for key, value in run.to_dict().items() if key != "tracking"}  # no store URI, no secret
        env[RUN_CONFIG_VARIABLE] = json.dumps(served, sort_keys=True)
        env[OUTPUT_VARIABLE] = str(served_files(run, run_key).output)
    recipe = RECIPES.get(run.env.name, ALFWORLD)  # environments gaca serves take ALFWorld's script settings
    env.update({**recipe.env_vars, **backend.env_vars})
    return VerlJob(command, overrides, env, cwd, recipe.max_user_processes)


def trainer_python(run: RunConfig) -> str:
    """``backend.python`` for the run's env family, else the Python running gaca."""
    python = verl_options(run).python
    if isinstance(python, Mapping):
        python = python.get(run.env.name)
    if not python:
        return sys.executable
    if os.sep not in python:  # a command name: the one on PATH
        return shutil.which(python) or python
    return str(Path(python).expanduser().absolute())  # the trainer starts in the checkout


def runs_on_cpu(run: RunConfig) -> bool:
    """``backend.device`` resolved on this machine: auto is cpu where torch sees no CUDA device."""
    if verl_options(run).device != "auto":
        return verl_options(run).device == "cpu"
    import torch

    return not torch.cuda.is_available()


def gpus_per_node(run: RunConfig, launcher_gpus: int | None) -> int:
    """``backend.gpus_per_node``, else the launcher's, else 1."""
    return verl_options(run).gpus_per_node or launcher_gpus or 1


def launcher_gpus_per_node() -> int | None:
    """``hydra.launcher.gpus_per_node`` of the current Hydra job or sweep driver, when it has one."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    value = HydraConfig.get().launcher.get("gpus_per_node")
    return int(value) if value else None


def verl_overrides(run: RunConfig, run_key: str, gpus: int, cpu: bool = False) -> list[str]:
    """verl-agent's Hydra overrides for ``run``: plain keys (in both configs), ``++`` keys (in one of
    them), ``+algorithm.gaca.*`` (every ``AdvantageConfig`` field and the plugin's invalid-action
    penalty), then ``backend.overrides``. ``cpu``: with ``CPU_SETTINGS`` and ``CPU_ADDED``."""
    from gaca.backends.verl.agent.env_manager import served_env_name
    from gaca.envs.families import FAMILIES

    trainer, env, backend, algorithm, model = run.trainer, run.env, verl_options(run), run.algorithm, run.model
    served = verl_environment(run) == "gaca"
    recipe = RECIPES.get(env.name, ALFWORLD)
    horizon = FAMILIES.get(env.name).horizon_of(env.horizon)
    data_dir = served_files(run, run_key).data if served else Path(backend.data_dir).expanduser()
    log_prob_micro = backend.log_prob_micro_batch_size_per_gpu or recipe.log_prob_micro_batch_size_per_gpu
    val_batch = trainer.num_eval_tasks or env.num_eval_tasks
    prompt_length = backend.max_prompt_length or recipe.max_prompt_length
    response_length = backend.max_response_length
    model_path = model.path
    if served:  # the CPU backend's prompts, budgets and evaluation episodes
        val_batch *= trainer.eval_episodes_per_task
        prompt_length, response_length = model.max_prompt_tokens, model.max_response_tokens
        if model.name != "path":
            model_path = str(served_files(run, run_key).policy)
    verl = [
        *RECIPE_CONSTANTS,
        # verl-agent's parquet files only say how many tasks a batch has; its environments pick the games.
        ("data.train_files", str(data_dir / TRAIN_FILE)),
        ("data.val_files", str(data_dir / VAL_FILE)),
        ("data.train_batch_size", trainer.tasks_per_iteration),
        ("data.val_batch_size", val_batch),
        ("data.max_prompt_length", prompt_length),
        ("data.max_response_length", response_length),
        ("actor_rollout_ref.model.path", model_path),
        ("actor_rollout_ref.actor.optim.lr", trainer.lr),
        ("actor_rollout_ref.actor.optim.weight_decay", trainer.weight_decay),
        ("actor_rollout_ref.actor.ppo_epochs", trainer.ppo_epochs),
        ("actor_rollout_ref.actor.ppo_mini_batch_size", trainer.minibatch_size),
        (
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
            backend.micro_batch_size_per_gpu or recipe.micro_batch_size_per_gpu,
        ),
        ("actor_rollout_ref.actor.clip_ratio", trainer.clip_ratio),
        ("actor_rollout_ref.actor.clip_ratio_low", trainer.clip_ratio),
        ("actor_rollout_ref.actor.clip_ratio_high", trainer.clip_ratio),
        ("actor_rollout_ref.actor.clip_ratio_c", trainer.clip_ratio_c),
        ("actor_rollout_ref.actor.entropy_coeff", trainer.entropy_coef),
        ("actor_rollout_ref.actor.grad_clip", trainer.max_grad_norm),
        ("actor_rollout_ref.actor.use_kl_loss", trainer.kl_coef > 0),
        ("actor_rollout_ref.actor.kl_loss_coef", trainer.kl_coef),
        ("actor_rollout_ref.actor.kl_loss_type", "low_var_kl"),
        ("actor_rollout_ref.rollout.n", 1),  # verl-agent asserts it; the group size is env.rollout.n
        ("actor_rollout_ref.rollout.temperature", trainer.rollout_temperature),
        ("actor_rollout_ref.rollout.tensor_model_parallel_size", backend.tensor_parallel_size or gpus),
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", log_prob_micro),
        ("actor_rollout_ref.rollout.val_kwargs.temperature", trainer.eval_temperature),
        ("actor_rollout_ref.rollout.val_kwargs.do_sample", trainer.eval_temperature > 0),
        ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", log_prob_micro),
        ("algorithm.adv_estimator", verl_names()[algorithm.method]),
        ("algorithm.gamma", algorithm.gamma),
        ("algorithm.norm_adv_by_std_in_grpo", algorithm.norm == "mean_std"),
        ("trainer.total_training_steps", trainer.iterations),
        # verl-agent's train set is one batch of tasks, so each epoch is one step.
        ("trainer.total_epochs", trainer.iterations),
        ("trainer.test_freq", trainer.eval_every),
        ("trainer.val_before_train", True),
        ("trainer.save_freq", trainer.checkpoint_every or trainer.iterations),
        ("trainer.resume_mode", "auto"),
        ("trainer.max_actor_ckpt_to_keep", 1),  # resuming needs the latest only (each is model + optimizer)
        ("trainer.default_local_dir", str(Path(run.output_dir).resolve() / run_key / "verl")),
        ("trainer.n_gpus_per_node", gpus),
        ("trainer.nnodes", backend.nnodes),
        ("trainer.logger", ["console", "mlflow"]),
        # verl's MLflow logger: project = experiment (it must match the run that MLFLOW_RUN_ID resumes).
        ("trainer.project_name", run.tracking.experiment),
        ("trainer.experiment_name", run_name(run, run_key)),
    ]
    replaced = dict(CPU_SETTINGS) if cpu else {}
    if served:
        replaced["data.truncation"] = "left"  # the CPU backend cuts prompts from the left
    verl = [(key, replaced.pop(key, value)) for key, value in verl] + list(replaced.items())
    verl_agent = [
        ("trainer.use_v1", False),
        ("env.env_name", served_env_name(env.name) if served else recipe.env_name),
        ("env.seed", run.seed),
        ("env.max_steps", horizon),
        ("env.rollout.n", trainer.group_size),
        ("actor_rollout_ref.actor.use_invalid_action_penalty", env.invalid_penalty > 0),
        ("actor_rollout_ref.actor.invalid_action_penalty_coef", env.invalid_penalty),
    ]
    if served:  # the CPU backend's arithmetic: verl's FSDP computes in bf16 unless told
        precision = {"param_dtype": FSDP_DTYPES[model.dtype], "reduce_dtype": "fp32", "buffer_dtype": "fp32"}
        verl_agent += [
            ("actor_rollout_ref.actor.fsdp_config.mixed_precision", precision),
            ("actor_rollout_ref.ref.fsdp_config.model_dtype", FSDP_DTYPES[model.dtype]),
            ("actor_rollout_ref.ref.fsdp_config.mixed_precision", precision),
        ]
    verl_agent += gigpo_options(algorithm)  # the hooks refuse verl-agent options that disagree with the estimator's
    if cpu:
        verl_agent += list(CPU_ADDED)
    estimator = [(f"algorithm.gaca.{name}", value) for name, value in algorithm.to_dict().items()]
    estimator.append(("algorithm.gaca.invalid_action_penalty", env.invalid_penalty))  # the plugin's step rewards
    return [
        *(override(key, value) for key, value in verl),
        *(override(key, value, prefix="++") for key, value in verl_agent),
        *(override(key, value, prefix="+") for key, value in estimator),
        *backend.overrides,
    ]


def override(key: str, value: Any, prefix: str = "") -> str:
    """``prefix key=value`` in Hydra's override syntax."""
    return f"{prefix}{key}={hydra_value(value)}"


def hydra_value(value: Any) -> str:
    """A Python value as Hydra override text that parses back to exactly that value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{key}:{hydra_value(item)}" for key, item in value.items()) + "}"
    text = str(value)
    if _parses_as(text) == text:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@functools.cache
def _parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def _parses_as(text: str) -> object:
    try:
        return _parser().parse_override(f"key={text}").value()
    except Exception:  # Hydra's grammar rejects it unquoted
        return None


SHELL_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def shell_word(text: str) -> str:
    """``text`` quoted for a POSIX shell only where needed, double quotes when that suffices."""
    if SHELL_SAFE.match(text):
        return text
    if not any(char in text for char in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)
