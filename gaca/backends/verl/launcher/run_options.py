"""``backend=verl``'s part of the run config: its options (``backend.*``) and the checks of a run it trains.

Reached through ``BACKENDS.spec("verl")`` (``gaca.backends.spec.BackendSpec``); the generic run config
knows no backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gaca.validation import check_choice, check_int

if TYPE_CHECKING:
    from gaca.backends.config import RunConfig

VERL_ENV_FAMILIES = ("household", "alfworld", "shop")
"""Env families verl-agent has: household and alfworld are its ALFWorld, shop is its WebShop."""
VERL_ENVIRONMENTS = ("auto", "gaca", "verl_agent")
"""``backend.environment``: who serves the episodes of a verl job (``VerlOptions.environment``)."""
VERL_DEVICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class VerlOptions:
    """``backend=verl``'s options (the ``backend.*`` keys besides ``name``): what builds verl-agent's
    ``main_ppo`` command line from the run config (``gaca.backends.verl.launcher.job``)."""

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
    """The trainer process; None = [this Python, -m, gaca.backends.verl.agent.main]. Tests put a CPU stand-in here."""
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
    """cpu: verl-agent's trainer on CPU (its run-time patches and CPU settings,
    ``gaca.backends.verl.agent.cpu_patches``);
    cuda: as on a GPU cluster; auto: cpu when the job starts on a machine without a CUDA device."""

    def __post_init__(self) -> None:
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


def verl_environment(run: RunConfig) -> str:
    """``backend.environment`` resolved: gaca or verl_agent."""
    environment = run.backend.options.environment
    if environment == "auto":
        return "verl_agent" if run.env.name in VERL_ENV_FAMILIES else "gaca"
    return environment


def verl_options(run: RunConfig) -> VerlOptions:
    """The ``backend.*`` options of a ``backend=verl`` run."""
    options = run.backend.options
    if not isinstance(options, VerlOptions):
        raise TypeError(f"backend.name={run.backend.name} has no verl options")
    return options
