"""Options of the group-rollout PPO trainer, and the run config that ties every part together."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from gaca.backends import BACKENDS
from gaca.envs import EnvConfig
from gaca.estimators import AdvantageConfig
from gaca.policy.config import ModelConfig
from gaca.validation import check_bool, check_choice, check_int, check_number, reject_unknown

INITS = ("bc", "scratch")
LR_SCHEDULES = ("constant", "linear")
STARTING_POLICY_CODE = ("envs", "policy", "backends/cpu/start.py", "backends/cpu/seeds.py")
"""The parts of ``gaca`` a behaviour-cloned start is made by (the demonstrations, the prompt, the
model, the cloning and its prior stage, the seeds it draws with; not the training loop): their
source is part of the clone's cache key, so that a folder's ``runs/bc-cache`` never hands a new
version of them a clone the old one made."""


@dataclass(frozen=True)
class BehaviourCloningConfig:
    """The ``init=bc`` base policy: cloned from noisy planner demonstrations (an instruct-model stand-in)."""

    episodes: int = 256
    """Demonstration episodes on training tasks."""
    noise: float = 0.3
    """Probability that a demonstration step takes a random admissible action instead of the planner's."""
    steps: int = 250
    """Optimizer steps of cross-entropy on the demonstrated actions."""
    lr: float = 3e-3
    """AdamW learning rate of cloning."""
    batch_size: int = 64
    """Demonstration steps per cloning batch."""
    prior_steps: int = 1000
    """Updates on the family's prior demonstrations, mixed with the cloning demonstrations, after cloning
    (errand: first actions that name the target ``prior_accuracy`` of the time); families without them
    skip the stage."""
    prior_lr: float = 1e-3
    """AdamW learning rate of the prior stage."""
    prior_max_steps: int = 4000
    """The prior stage goes on by 250 updates while the clone is right less often than the family's
    ``prior_accuracy`` minus 0.05 at some pivot (mean probability of the right option on 256 training
    tasks), up to this many updates in all; at or below ``prior_steps``: exactly ``prior_steps``."""

    def __post_init__(self) -> None:
        check_int("trainer.bc.episodes", self.episodes, 1)
        check_number("trainer.bc.noise", self.noise, 0.0, 1.0, "in [0, 1]")
        check_int("trainer.bc.steps", self.steps, 0)
        check_number("trainer.bc.lr", self.lr, 0.0, 1.0, "in (0, 1]", low_open=True)
        check_int("trainer.bc.batch_size", self.batch_size, 1)
        check_int("trainer.bc.prior_steps", self.prior_steps, 0)
        check_int("trainer.bc.prior_max_steps", self.prior_max_steps, 0)
        check_number("trainer.bc.prior_lr", self.prior_lr, 0.0, 1.0, "in (0, 1]", low_open=True)


@dataclass(frozen=True)
class TrainerConfig:
    """Group-rollout PPO (the paper's Eq. 1 with verl-agent's settings unless noted)."""

    preset: str = "default"
    """Name of the preset this came from (quick, default, paper); informational."""
    iterations: int = 25
    """Training iterations; each collects one batch of group rollouts and updates on it."""
    tasks_per_iteration: int = 12
    """Distinct training tasks per iteration (verl-agent: 16)."""
    group_size: int = 8
    """Rollouts per task, the G of the group normalisation (the paper's 8), >= 2."""
    ppo_epochs: int = 1
    """Passes over the batch per iteration."""
    minibatch_size: int = 256
    """Step rows per gradient step."""
    lr: float = 1e-3
    """AdamW learning rate (the paper's 1e-6 is for a 1.5B model; a tiny model needs far more)."""
    lr_schedule: str = "constant"
    """constant, or linear: at iteration i of n the rate is lr x (1 - (i - 1) / n), annealed toward 0 as
    CleanRL's PPO does (``anneal_lr``), so that the last iterations move the policy little."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    clip_ratio: float = 0.2
    """PPO clip range epsilon of Eq. 1."""
    clip_ratio_c: float | None = 3.0
    """Dual-clip constant (> 1) bounding the loss of negative advantages (verl's 3.0); None disables it."""
    kl_coef: float = 0.01
    """beta_KL: weight of the low_var_kl penalty to the frozen reference policy."""
    entropy_coef: float = 0.0
    """Weight of an entropy bonus (0 = none, as verl-agent)."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip."""
    rollout_temperature: float = 1.0
    """Sampling temperature of training rollouts."""
    eval_temperature: float = 0.4
    """Sampling temperature of evaluation (verl-agent's validation setting)."""
    eval_every: int = 5
    """Evaluate on the held-out tasks every this many iterations (and before the first and after the last)."""
    num_eval_tasks: int | None = None
    """Evaluate on the first n held-out tasks; None = all of env.num_eval_tasks."""
    eval_episodes_per_task: int = 4
    """Episodes per held-out task in every evaluation (k), drawn from the evaluation's seeded generator;
    the score is the mean over tasks x k episodes (128 x 4 = 512 keeps a score's binomial std near 2 points)."""
    checkpoint_every: int = 5
    """Write a checkpoint every this many iterations (and after the last); 0 = only at the end."""
    init: str = "bc"
    """bc: start from the cloned base policy; scratch: from the random initialisation."""
    bc: BehaviourCloningConfig = field(default_factory=BehaviourCloningConfig)
    """How the bc base policy is made (cached by these values, the env and the model)."""
    threads: int | None = None
    """torch intra-op threads; None = torch's default (every core, for one run); sweep launchers set one per
    job's cores, so that parallel jobs do not fight over them."""
    transcripts: int = 3
    """Evaluation transcripts saved as text artifacts at each evaluation."""
    estimated_cpu_minutes: float = 3.0
    """Wall-clock estimate of one run on 2 CPU cores, used by sweep --dry-run."""
    estimated_gpu_hours: float = 0.0
    """GPU-hour estimate of one run (paper preset), used by sweep --dry-run."""

    def __post_init__(self) -> None:
        check_int("trainer.iterations", self.iterations, 1)
        check_int("trainer.tasks_per_iteration", self.tasks_per_iteration, 1)
        check_int("trainer.group_size", self.group_size, 2, why=" (group normalisation needs two rollouts)")
        check_int("trainer.ppo_epochs", self.ppo_epochs, 1)
        check_int("trainer.minibatch_size", self.minibatch_size, 1)
        check_number("trainer.lr", self.lr, 0.0, 1.0, "in (0, 1]", low_open=True)
        check_choice("trainer.lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_number("trainer.weight_decay", self.weight_decay, 0.0, 1.0, "in [0, 1]")
        check_number("trainer.clip_ratio", self.clip_ratio, 0.0, 1.0, "in (0, 1)", low_open=True)
        if self.clip_ratio_c is not None:
            check_number("trainer.clip_ratio_c", self.clip_ratio_c, 1.0, math.inf, "> 1 or null", low_open=True)
        check_number("trainer.kl_coef", self.kl_coef, 0.0, math.inf, ">= 0")
        check_number("trainer.entropy_coef", self.entropy_coef, 0.0, math.inf, ">= 0")
        check_number("trainer.max_grad_norm", self.max_grad_norm, 0.0, math.inf, "> 0", low_open=True)
        check_number("trainer.rollout_temperature", self.rollout_temperature, 0.0, 10.0, "in (0, 10]", low_open=True)
        check_number("trainer.eval_temperature", self.eval_temperature, 0.0, 10.0, "in [0, 10] (0 = greedy)")
        check_int("trainer.eval_every", self.eval_every, 1)
        if self.num_eval_tasks is not None:
            check_int("trainer.num_eval_tasks", self.num_eval_tasks, 1)
        check_int("trainer.eval_episodes_per_task", self.eval_episodes_per_task, 1)
        check_int("trainer.checkpoint_every", self.checkpoint_every, 0)
        check_choice("trainer.init", self.init, INITS)
        check_int("trainer.transcripts", self.transcripts, 0)
        if self.threads is not None:
            check_int("trainer.threads", self.threads, 1)
        check_number("trainer.estimated_cpu_minutes", self.estimated_cpu_minutes, 0.0, math.inf, ">= 0")
        check_number("trainer.estimated_gpu_hours", self.estimated_gpu_hours, 0.0, math.inf, ">= 0")

    def lr_at(self, iteration: int) -> float:
        """The learning rate of iteration ``iteration`` (1-based) under ``lr_schedule``."""
        if self.lr_schedule == "linear":
            return self.lr * (1.0 - (iteration - 1) / self.iterations)
        return self.lr

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainerConfig:
        values = dict(values)
        _reject_unknown("trainer", values, cls)
        bc = values.pop("bc", None) or {}
        _reject_unknown("trainer.bc", bc, BehaviourCloningConfig)
        return cls(**values, bc=BehaviourCloningConfig(**bc))


@dataclass(frozen=True)
class TrackingConfig:
    """Where a run is logged (MLflow). Not part of the run's identity."""

    experiment: str = "gaca"
    """MLflow experiment name."""
    uri: str | None = None
    """Tracking URI; None = $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working folder."""

    def __post_init__(self) -> None:
        if not isinstance(self.experiment, str) or not self.experiment.strip():
            raise ValueError(f"tracking.experiment must be a non-empty string, got {self.experiment!r}")


VERL_ENV_FAMILIES = ("household", "alfworld", "shop")
"""Env families verl-agent has: household and alfworld are its ALFWorld, shop is its WebShop."""
VERL_ENVIRONMENTS = ("auto", "gaca", "verl_agent")
"""``backend.environment``: who serves the episodes of a verl job (``BackendConfig.environment``)."""
VERL_DEVICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class BackendConfig:
    """What trains the run. ``cpu`` ignores every other field; ``verl`` builds verl-agent's
    ``main_ppo`` command line from the run config (``gaca.backends.verl.job``)."""

    name: str = "cpu"
    """cpu: the embedded trainer (gaca.backends.cpu.loop); verl: a verl-agent training job
    (gaca.backends.verl.launch)."""
    gpus_per_node: int | None = None
    """trainer.n_gpus_per_node; None = the launcher's hydra.launcher.gpus_per_node, else 1."""
    nnodes: int = 1
    """trainer.nnodes."""
    tensor_parallel_size: int | None = None
    """vLLM tensor parallelism of the rollouts; None = every GPU of the node (verl-agent's scripts)."""
    max_prompt_length: int | None = None
    """data.max_prompt_length in tokens; None = the family's (ALFWorld 2048, WebShop 4096)."""
    max_response_length: int = 512
    """data.max_response_length: tokens per action (the paper's 512)."""
    micro_batch_size_per_gpu: int | None = None
    """actor.ppo_micro_batch_size_per_gpu; None = the family's (ALFWorld 32, WebShop 8)."""
    log_prob_micro_batch_size_per_gpu: int | None = None
    """Micro batch of the rollout and reference log-prob passes; None = the family's (32, 16)."""
    data_dir: str = "~/data/verl-agent/text"
    """Holds train.parquet and test.parquet from verl-agent's examples.data_preprocess.prepare."""
    verl_agent_dir: str | None = None
    """A verl-agent checkout: the job's working folder, prepended to PYTHONPATH; None = as installed."""
    trainer_command: list[str] | None = None
    """The trainer process; None = [this Python, -m, gaca.backends.verl.agent_main]. Tests put a CPU stand-in here."""
    overrides: list[str] = field(default_factory=list)
    """Extra Hydra overrides for verl, appended last (they win), e.g. [actor_rollout_ref.rollout.name=sglang]."""
    env_vars: dict[str, str] = field(default_factory=dict)
    """Extra environment variables of the trainer process."""
    python: str | dict[str, str] | None = None
    """The trainer's Python (its environment holds verl-agent's pins: ``scripts/setup-verl-agent.sh``), or
    env family -> Python where families need different ones (verl-agent's WebShop wants its own); None =
    the Python running gaca. Unused with ``trainer_command``."""
    environment: str = "auto"
    """Who serves the episodes: gaca (its families as verl-agent's environment manager, the CPU backend's
    observations and rewards), verl_agent (its ALFWorld or WebShop), or auto: gaca for a family verl-agent
    lacks (errand), else verl_agent (so household at paper scale is verl-agent's ALFWorld unless asked)."""
    device: str = "auto"
    """cpu: verl-agent's trainer on CPU (its run-time patches and CPU settings, ``gaca.backends.verl.cpu_patches``);
    cuda: as on a GPU cluster; auto: cpu when the job starts on a machine without a CUDA device."""

    def __post_init__(self) -> None:
        check_choice("backend.name", self.name, BACKENDS)
        check_choice("backend.environment", self.environment, VERL_ENVIRONMENTS)
        check_choice("backend.device", self.device, VERL_DEVICES)
        pythons = self.python.values() if isinstance(self.python, Mapping) else [self.python]
        if not all(python is None or (isinstance(python, str) and python) for python in pythons) or (
            isinstance(self.python, Mapping) and not all(isinstance(key, str) for key in self.python)
        ):
            raise ValueError(
                "backend.python must be a Python executable path, a mapping env family -> path, or null; got "
                f"{self.python!r}"
            )
        for key in (
            "gpus_per_node",
            "tensor_parallel_size",
            "max_prompt_length",
            "micro_batch_size_per_gpu",
            "log_prob_micro_batch_size_per_gpu",
        ):
            if getattr(self, key) is not None:
                check_int(f"backend.{key}", getattr(self, key), 1)
        check_int("backend.nnodes", self.nnodes, 1)
        check_int("backend.max_response_length", self.max_response_length, 1)
        if not isinstance(self.data_dir, str) or not self.data_dir:
            raise ValueError(f"backend.data_dir must be a folder path, got {self.data_dir!r}")
        if self.verl_agent_dir is not None and (not isinstance(self.verl_agent_dir, str) or not self.verl_agent_dir):
            raise ValueError(f"backend.verl_agent_dir must be a folder path or null, got {self.verl_agent_dir!r}")
        if self.trainer_command is not None and (
            not isinstance(self.trainer_command, (list, tuple))
            or not self.trainer_command
            or not all(isinstance(part, str) and part for part in self.trainer_command)
        ):
            raise ValueError(
                f"backend.trainer_command must be a non-empty list of strings or null, got {self.trainer_command!r}"
            )
        if not isinstance(self.overrides, (list, tuple)) or not all(
            isinstance(o, str) and "=" in o for o in self.overrides
        ):
            raise ValueError(f"backend.overrides must be a list of KEY=VALUE strings, got {self.overrides!r}")
        if not isinstance(self.env_vars, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.env_vars.items()
        ):
            raise ValueError(f"backend.env_vars must map names to strings, got {self.env_vars!r}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BackendConfig:
        _reject_unknown("backend", values, cls)
        return cls(**values)


@dataclass(frozen=True)
class RunConfig:
    """Everything one training run needs; built from the composed Hydra config by ``from_dict``."""

    algorithm: AdvantageConfig
    env: EnvConfig
    model: ModelConfig
    trainer: TrainerConfig
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    seed: int = 0
    """Seed of the policy initialisation, rollouts and PPO (the paper's 0, 1, 2)."""
    block: str = "adhoc"
    """The ablation block this run belongs to (sweeps set it; a single run is adhoc)."""
    output_dir: str = "runs"
    """Where checkpoints and the bc cache are written (relative to the working folder)."""
    resume: bool = True
    """Continue from this run's last checkpoint when one exists."""
    backend: BackendConfig = field(default_factory=BackendConfig)
    """What trains it: the embedded CPU trainer (default) or a verl job on GPUs."""

    def __post_init__(self) -> None:
        if self.trainer.tasks_per_iteration > self.env.num_train_tasks:
            raise ValueError(
                f"trainer.tasks_per_iteration={self.trainer.tasks_per_iteration} distinct tasks cannot be drawn from "
                "the "
                f"env's {self.env.num_train_tasks} training tasks (env.num_train_tasks): lower it or raise "
                "env.num_train_tasks"
            )
        if self.trainer.num_eval_tasks is not None and self.trainer.num_eval_tasks > self.env.num_eval_tasks:
            raise ValueError(
                f"trainer.num_eval_tasks={self.trainer.num_eval_tasks} is more than the env's "
                f"{self.env.num_eval_tasks} "
                "held-out tasks (env.num_eval_tasks): lower it or raise env.num_eval_tasks"
            )
        if self.backend.name == "verl":
            _check_verl_run(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> RunConfig:
        """Validate a plain mapping (e.g. ``OmegaConf.to_container(cfg, resolve=True)``).

        Raises ``ValueError`` whose message names the offending key, e.g. ``trainer.group_size``.
        """
        values = dict(values)
        _reject_unknown("config", values, cls, extra=("hydra",))
        for key in ("algorithm", "env", "model", "trainer"):
            if key not in values:
                raise ValueError(f"config.{key} is missing; compose it from conf/ (e.g. {key}=...)")
        algorithm = AdvantageConfig.from_dict(_plain(values["algorithm"], "algorithm"))
        env_values = _plain(values["env"], "env")
        # conf/env lists every knob with null = "the difficulty preset's value".
        knobs = {k: v for k, v in (env_values.get("knobs") or {}).items() if v is not None}
        env = EnvConfig.from_dict({**env_values, "knobs": knobs})
        model = ModelConfig.from_dict(_plain(values["model"], "model"))
        trainer = TrainerConfig.from_dict(_plain(values["trainer"], "trainer"))
        tracking = TrackingConfig(**_plain(values.get("tracking") or {}, "tracking"))
        seed = values.get("seed", 0)
        check_int("seed", seed, 0)
        block = values.get("block", "adhoc")
        if not isinstance(block, str) or not block:
            raise ValueError(f"block must be a non-empty string, got {block!r}")
        resume = values.get("resume", True)
        check_bool("resume", resume)
        backend = BackendConfig.from_dict(_plain(values.get("backend") or {}, "backend"))
        output_dir = str(values.get("output_dir", "runs"))
        return cls(algorithm, env, model, trainer, tracking, seed, block, output_dir, resume, backend)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def starting_policy(self) -> dict[str, Any] | None:
        """What the behaviour-cloned starting policy depends on (its cache key); None for init=scratch."""
        if self.trainer.init == "scratch":
            return None
        from gaca.contract import resolved_knobs

        env = self.env.to_dict()
        env["knobs"] = resolved_knobs(env)  # a preset's values, not only its name
        return {
            "env": env,
            "model": self.model.to_dict(),
            "bc": self.trainer.bc.__dict__,
            "seed": self.seed,
            "code": source_fingerprint(Path(__file__).parents[1], STARTING_POLICY_CODE),
        }


@functools.cache
def source_fingerprint(root: Path, parts: tuple[str, ...]) -> str:
    """sha256 over the ``.py`` files of ``parts`` (folders, searched recursively, or files) under
    ``root``: each file's path relative to ``root`` and its bytes, in path order."""
    digest = hashlib.sha256()
    for part in parts:
        path = root / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def verl_environment(run: RunConfig) -> str:
    """``backend.environment`` resolved: gaca or verl_agent."""
    environment = run.backend.environment
    if environment == "auto":
        return "verl_agent" if run.env.name in VERL_ENV_FAMILIES else "gaca"
    return environment


def _check_verl_run(run: RunConfig) -> None:
    """What a verl job cannot take from a config that the CPU trainer accepts."""
    served = verl_environment(run) == "gaca"
    if run.model.name != "path" and not served:
        raise ValueError(
            f"model.name: backend=verl on verl-agent's environments trains a Hugging Face checkpoint; set model=path "
            "model.path=<folder or hub id> (e.g. Qwen2.5-1.5B-Instruct), or backend.environment=gaca for "
            f"model={run.model.name}"
        )
    if run.trainer.init != "scratch" and run.model.name == "path":
        raise ValueError(
            f"trainer.init={run.trainer.init} is the CPU backend's behaviour-cloned start of model=tiny or small; "
            "backend=verl starts a checkpoint as loaded: use trainer=paper or trainer.init=scratch"
        )
    if run.trainer.clip_ratio_c is None:
        raise ValueError(
            "trainer.clip_ratio_c must be a number > 1 with backend=verl (verl always applies the dual clip)"
        )
    if run.trainer.lr_schedule != "constant":
        raise ValueError(
            f"trainer.lr_schedule={run.trainer.lr_schedule} is the CPU trainer's; backend=verl keeps verl's constant "
            "learning rate: use trainer=paper or trainer.lr_schedule=constant"
        )
    if run.env.name not in VERL_ENV_FAMILIES and not served:
        raise ValueError(
            f"env.name={run.env.name} has no verl-agent environment (it has {list(VERL_ENV_FAMILIES)}); "
            "backend.environment=gaca serves it"
        )
    from gaca.backends.verl.options import check_run  # no verl-agent option the hooks would ignore

    check_run(run)


def _plain(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{key} must be a mapping of options, got {value!r}")
    return dict(value)


def _reject_unknown(prefix: str, values: Mapping[str, Any], cls: type, extra: tuple[str, ...] = ()) -> None:
    reject_unknown(
        prefix, {key: value for key, value in values.items() if key not in extra}, [f.name for f in fields(cls)]
    )
