"""What every environment family provides: observations, step results, episodes and the task split."""

from __future__ import annotations

import functools
import random
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from gaca.envs.config import EnvConfig
from gaca.envs.knobs import resolve_knobs

MAX_REDRAWS = 1000
"""Draws of a training task before giving up on finding one that is not an evaluation task."""
PRIOR_REPEATS = 4
"""Labelled examples per prior choice in the base policy's prior stage (``EnvFamily.prior_demonstrations``)."""


@dataclass(slots=True)
class Observation:
    """What the agent is shown before choosing its next action."""

    text: str
    """The observation in the family's wording (lowercase words, punctuation as separate words)."""
    anchor: str
    """The anchor state of GiGPO: this observation without history or counters (here equal to text)."""
    task: str
    """The task instruction, constant over an episode."""
    admissible: tuple[str, ...]
    """The commands that are valid now, in a deterministic order; shared, so never mutate it."""
    commands: tuple[str, ...] | None = None
    """Well-formed commands an agent may write now: the admissible ones plus invalid ones (which cost the
    invalid penalty and change nothing), in a deterministic order; constrained decoding chooses among
    them. None: the admissible commands only."""


@dataclass(frozen=True)
class PriorChoice:
    """One decision of a task at which the base policy gets a prior (``EnvFamily.prior_choices``)."""

    task_id: int
    pivot: str
    """Which decision of the task (errand: "object", "end")."""
    observation: Observation
    history: tuple[tuple[str, str], ...]
    """(observation text, action) pairs before it, oldest first, as a rollout's prompt shows them."""
    right: str
    wrong: tuple[str, ...]


@dataclass(slots=True)
class StepResult:
    """The outcome of one action."""

    observation: Observation
    """The observation after the action."""
    reward: float
    """1.0 on success, -invalid_penalty for an inadmissible action, else 0.0."""
    done: bool
    """True at success, at a purchase (shop) or once horizon steps have been taken."""
    won: bool
    """True when the task is solved by this step."""
    invalid: bool
    """True when the action was not admissible; the state did not change."""
    score: float = 0.0
    """Graded task score in [0, 1]: the WebShop reward of a purchase (shop), 1.0 on success (household)."""


class Env(ABC):
    """One episode of one task. ``reset`` starts it; ``step`` raises once it is done."""

    task_id: int
    observation: Observation
    """The current observation: the one ``reset`` or the last ``step`` returned."""

    @abstractmethod
    def reset(self) -> Observation:
        """Put the task in its initial state and return the first observation."""

    @abstractmethod
    def step(self, action: str) -> StepResult:
        """Apply one command (any string; an inadmissible one costs the invalid penalty)."""

    @abstractmethod
    def expert_action(self) -> str:
        """The planner's next command from the current state; it finishes the task within the horizon."""


TaskT = TypeVar("TaskT", bound=Hashable)
EnvT = TypeVar("EnvT", bound=Env)


class EnvFamily(ABC, Generic[TaskT, EnvT]):
    """A generator of tasks of one kind, split into training and held-out evaluation task ids.

    Task ids ``0 .. num_eval_tasks - 1`` are the evaluation tasks and the next ``num_train_tasks`` ids
    the training tasks. What a task id holds is drawn from ``cfg.seed`` and the id alone, so the split
    depends on the configuration only and every method and training seed meets the same tasks. A
    training task is redrawn while it equals an evaluation task (by ``task_signature``), so that
    evaluation tasks are never seen in training. ``TaskT`` is the family's task description and
    ``EnvT`` its episode class.
    """

    default_horizon: ClassVar[int]
    """The paper's episode horizon for this family, used when ``cfg.horizon`` is None."""
    knob_presets: ClassVar[Mapping[str, Any]]
    """Difficulty name -> knob dataclass instance."""

    @classmethod
    def horizon_of(cls, horizon: int | None) -> int:
        """The episode horizon a config's ``horizon`` gives: itself, or ``default_horizon`` when None."""
        return horizon if horizon is not None else cls.default_horizon

    @property
    def prior_accuracy(self) -> float:
        """How often the base policy is to be right at ``prior_choices`` (0: no prior stage)."""
        return 0.0

    def prior_choices(self, task_ids: Iterable[int]) -> list[PriorChoice]:
        """The decisions of ``task_ids`` at which the behaviour clone gets a task-reading prior, as an
        instruct model brings one; empty (no prior stage) unless the family defines them (errand)."""
        return []

    def prior_demonstrations(self) -> list[tuple[PriorChoice, str]]:
        """``PRIOR_REPEATS`` labelled examples of every prior choice of the training tasks: the right
        option with probability ``prior_accuracy``, else a wrong one. Labels are drawn afresh for every
        repeat (from the env seed, task, pivot and repeat), so the clone learns to read the task and to
        be right about that often, not which task had which label."""
        if self.prior_accuracy == 0:
            return []
        demos = []
        for choice in self.prior_choices(self.train_task_ids):
            for repeat in range(PRIOR_REPEATS):
                rng = random.Random(f"{self.cfg.name}-prior/{self.cfg.seed}/{choice.task_id}/{choice.pivot}/{repeat}")
                demos.append((choice, choice.right if rng.random() < self.prior_accuracy else rng.choice(choice.wrong)))
        return demos

    def __init__(self, cfg: EnvConfig) -> None:
        self.cfg = cfg
        self.knobs = self.resolve_knobs(cfg.difficulty, cfg.knobs)
        self.horizon: int = self.horizon_of(cfg.horizon)
        self.eval_task_ids: range = range(cfg.num_eval_tasks)
        self.train_task_ids: range = range(cfg.num_eval_tasks, cfg.num_eval_tasks + cfg.num_train_tasks)

    @classmethod
    def check_config(cls, cfg: EnvConfig) -> None:
        """Validate the fields of ``cfg`` that this family reads beyond the common ones (EnvConfig calls it)."""
        cls.resolve_knobs(cfg.difficulty, cfg.knobs)
        for name in ("games_dir", "cache_dir"):
            if getattr(cfg, name) is not None:
                raise ValueError(f"env.{name} applies to env alfworld only; leave it null for {cfg.name}")

    @classmethod
    def resolve_knobs(cls, difficulty: str, overrides: Mapping[str, Any]) -> Any:
        """The knobs of preset ``difficulty`` with ``overrides`` applied, validated by name."""
        return resolve_knobs(cls.knob_presets, difficulty, overrides)

    def make(self, task_id: int) -> EnvT:
        """A fresh episode object for ``task_id``; call ``reset`` before stepping it."""
        if isinstance(task_id, bool) or not isinstance(task_id, int) or task_id < 0:
            raise ValueError(f"task_id must be an int >= 0, got {task_id!r}")
        return self._episode(task_id, self.task(task_id))

    def task(self, task_id: int) -> TaskT:
        """The static description of task ``task_id`` (a frozen dataclass of the family)."""
        rng = random.Random(f"{self.cfg.name}/{self.cfg.seed}/{task_id}")
        task = self._generate(rng)
        if task_id in self.eval_task_ids:
            return task
        for _ in range(MAX_REDRAWS):
            if self.task_signature(task) not in self._held_out:
                return task
            task = self._generate(rng)
        raise RuntimeError(
            f"{self.cfg.name}: task {task_id} kept matching held-out evaluation tasks; the knobs leave too few "
            f"distinct tasks for num_eval_tasks={self.cfg.num_eval_tasks}: lower it or enlarge the knobs"
        )

    def task_signature(self, task: TaskT) -> Hashable:
        """What makes two tasks the same for the train/eval split (the whole task by default)."""
        return task

    @functools.cached_property
    def _held_out(self) -> frozenset[Hashable]:
        return frozenset(self.task_signature(self.task(t)) for t in self.eval_task_ids)

    @abstractmethod
    def _generate(self, rng: random.Random) -> TaskT:
        """Draw one task from ``rng`` (deterministic in the rng's state and the knobs)."""

    @abstractmethod
    def _episode(self, task_id: int, task: TaskT) -> EnvT:
        """An episode object playing ``task``."""

    @abstractmethod
    def vocabulary(self) -> Iterable[str]:
        """Every word (as split by ``gaca.envs.text.words``) that tasks, observations and commands can hold."""
