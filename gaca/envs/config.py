"""The environment configuration: one frozen dataclass, validated once at the boundary."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gaca.envs.families import FAMILIES
from gaca.validation import check_choice, check_int, check_number, reject_unknown

MAX_TASKS = 1_000_000


@dataclass(frozen=True)
class EnvConfig:
    """Which environment family to build, how hard its tasks are and how episodes are scored.

    Every field is checked in ``__post_init__`` (the knobs by the family); a bad value raises
    ``ValueError`` naming the field and what it may be.
    """

    name: str = "household"
    """Environment family: household (ALFWorld-style), shop (WebShop-style) or alfworld (ALFWorld's real engine)."""
    difficulty: str = "easy"
    """Knob preset: easy (learnable by a tiny policy on CPU) or paper (ALFWorld/WebShop-like sizes)."""
    knobs: Mapping[str, Any] = field(default_factory=dict)
    """Overrides of single knobs of the preset, e.g. {"num_receptacles": 8}; see the family's knobs."""
    horizon: int | None = None
    """Steps before an episode is cut; None = the paper's (household 50, shop 15), see family.horizon."""
    num_train_tasks: int = 1024
    """Number of training task ids."""
    num_eval_tasks: int = 128
    """Number of held-out evaluation task ids (the paper evaluates on 128)."""
    invalid_penalty: float = 0.1
    """Reward subtracted for an inadmissible action (verl-agent's 0.1), >= 0."""
    seed: int = 0
    """Seed of the task generator (and of the shop's catalogue); fixes what every task id holds."""
    games_dir: str | None = None
    """alfworld only: the folder of ALFWorld's official games (holding json_2.1.1/, as alfworld-download
    fills $ALFWORLD_DATA); None = games generated from household tasks."""
    cache_dir: str | None = None
    """alfworld only: where generated games are written, one file per task; None = ~/.cache/gaca/alfworld."""

    def __post_init__(self) -> None:
        check_choice("env.name", self.name, FAMILIES)
        if self.horizon is not None:
            check_int("env.horizon", self.horizon, 1, 10_000)
        check_int("env.num_train_tasks", self.num_train_tasks, 1, MAX_TASKS)
        check_int("env.num_eval_tasks", self.num_eval_tasks, 1, MAX_TASKS)
        check_int("env.seed", self.seed, 0, 2**63 - 1)
        check_number("env.invalid_penalty", self.invalid_penalty, 0.0, math.inf, ">= 0")
        if not isinstance(self.knobs, Mapping):
            raise ValueError(f"env.knobs must be a mapping of knob name -> value, got {self.knobs!r}")
        for name in ("games_dir", "cache_dir"):
            folder = getattr(self, name)
            if folder is not None and (not isinstance(folder, str) or not folder):
                raise ValueError(f"env.{name} must be a folder path or null, got {folder!r}")
        FAMILIES.get(self.name).check_config(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> EnvConfig:
        """Build from a mapping (e.g. a Hydra node), rejecting unknown keys by name."""
        reject_unknown("env", values, cls.__dataclass_fields__)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
