"""The run config that ties every part together, validated at the boundary (``RunConfig.from_dict``).

Its sections live beside it: ``trainer_config`` (``trainer.*``), ``tracking_config`` (``tracking.*``),
``backend_config`` (``backend.*``, whose options each backend owns); ``starting_policy`` holds the
behaviour clone's source fingerprint. This module names no backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gaca.backends.backend_config import BackendConfig
from gaca.backends.backend_config import spec as backend_spec
from gaca.backends.fields import plain, reject_fields
from gaca.backends.starting_policy import GACA_ROOT, STARTING_POLICY_CODE, source_fingerprint
from gaca.backends.tracking_config import TrackingConfig
from gaca.backends.trainer_config import INITS, LR_SCHEDULES, BehaviourCloningConfig, TrainerConfig
from gaca.envs import EnvConfig
from gaca.estimators import AdvantageConfig
from gaca.policy.config import ModelConfig
from gaca.validation import check_bool, check_int

__all__ = [
    "INITS",
    "LR_SCHEDULES",
    "STARTING_POLICY_CODE",
    "BackendConfig",
    "BehaviourCloningConfig",
    "RunConfig",
    "TrackingConfig",
    "TrainerConfig",
    "source_fingerprint",
]


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
    """What trains it: the embedded CPU trainer (default) or a verl job on GPUs (``gaca.backends.BACKENDS``)."""
    extend: bool = True
    """Start from the last checkpoint of the same configuration's finished run with the most iterations
    below ``trainer.iterations`` (CPU trainer, constant learning rate; ``gaca.backends.cpu.extension``)."""

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
        backend_spec(self.backend.name).check(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> RunConfig:
        """Validate a plain mapping (e.g. ``OmegaConf.to_container(cfg, resolve=True)``).

        Raises ``ValueError`` whose message names the offending key, e.g. ``trainer.group_size``.
        """
        values = dict(values)
        reject_fields("config", values, cls, extra=("hydra",))
        for key in ("algorithm", "env", "model", "trainer"):
            if key not in values:
                raise ValueError(f"config.{key} is missing; compose it from conf/ (e.g. {key}=...)")
        algorithm = AdvantageConfig.from_dict(plain(values["algorithm"], "algorithm"))
        env_values = plain(values["env"], "env")
        # conf/env lists every knob with null = "the difficulty preset's value".
        knobs = {k: v for k, v in (env_values.get("knobs") or {}).items() if v is not None}
        env = EnvConfig.from_dict({**env_values, "knobs": knobs})
        model = ModelConfig.from_dict(plain(values["model"], "model"))
        trainer = TrainerConfig.from_dict(plain(values["trainer"], "trainer"))
        tracking = TrackingConfig(**plain(values.get("tracking") or {}, "tracking"))
        seed = values.get("seed", 0)
        check_int("seed", seed, 0)
        block = values.get("block", "adhoc")
        if not isinstance(block, str) or not block:
            raise ValueError(f"block must be a non-empty string, got {block!r}")
        resume = values.get("resume", True)
        check_bool("resume", resume)
        extend = values.get("extend", True)
        check_bool("extend", extend)
        backend = BackendConfig.from_dict(plain(values.get("backend") or {}, "backend"))
        output_dir = str(values.get("output_dir", "runs"))
        return cls(algorithm, env, model, trainer, tracking, seed, block, output_dir, resume, backend, extend)

    def to_dict(self) -> dict[str, Any]:
        """A plain mapping that ``from_dict`` reads back (the backend node flat, as in Hydra)."""
        return {**asdict(self), "backend": self.backend.to_dict()}

    def starting_policy(self) -> dict[str, Any] | None:
        """What the behaviour-cloned starting policy depends on (its cache key); None for init=scratch."""
        if self.trainer.init == "scratch":
            return None
        from gaca.contract import resolved_knobs
        from gaca.envs.families import FAMILIES

        env = self.env.to_dict()
        env["knobs"] = resolved_knobs(env)  # a preset's values, not only its name
        env["horizon"] = FAMILIES.get(env["name"]).horizon_of(env["horizon"])  # null (backend=verl): the family's
        return {
            "env": env,
            "model": self.model.to_dict(),
            "bc": self.trainer.bc.__dict__,
            "seed": self.seed,
            "code": source_fingerprint(GACA_ROOT, STARTING_POLICY_CODE),
        }
