"""Options of the group-rollout PPO trainer (``trainer.*``) and of its behaviour-cloned start (``trainer.bc.*``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gaca.backends.fields import reject_fields
from gaca.policy.config import LAST_LAYERS
from gaca.validation import check_bool, check_choice, check_int, check_number

INITS = ("bc", "scratch")
LR_SCHEDULES = ("constant", "linear")
UPDATES = ("every_row", "distinct")


@dataclass(frozen=True)
class BehaviourCloningConfig:
    """The ``init=bc`` base policy: cloned from noisy planner demonstrations (an instruct-model stand-in)."""

    episodes: int = 256
    """Demonstration episodes on training tasks."""
    noise: float = 0.3
    """Probability that a demonstration step takes a random admissible action instead of the planner's."""
    steps: int = 500
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
    """Name of the preset this came from (quick, short, default, paper); informational."""
    iterations: int = 40
    """Training iterations; each collects one batch of group rollouts and updates on it."""
    tasks_per_iteration: int = 24
    """Distinct training tasks per iteration (verl-agent: 16)."""
    group_size: int = 8
    """Rollouts per task, the G of the group normalisation (the paper's 8), >= 2."""
    ppo_epochs: int = 1
    """Passes over the batch per iteration."""
    minibatch_size: int = 256
    """Step rows per gradient step."""
    update: str = "every_row"
    """How the PPO update computes its log-probabilities (one loss either way, ``gaca.backends.cpu.ppo``):
    every_row scores every row of a mini-batch and the reference per mini-batch; distinct scores each
    distinct (prompt, response) pair of a mini-batch once and the reference once per iteration, keeping
    every copy's loss term. They differ in the last bits, so the value is part of a run's key
    (docs/benchmarks.md, "Computing each distinct step once")."""
    last_layer: str = "every_position"
    """How the update's scoring forwards (policy and reference) compute the last decoder layer:
    every_position through the model's own forward; scored_positions at the R + 1 positions the LM head
    reads only (``gaca.policy.last_layer``, Qwen2 models): the same logits up to float rounding, so the
    value is part of a run's key (docs/benchmarks.md, "The last layer at the scored positions")."""
    compile: bool = False
    """The update's scoring forwards through ``torch.compile(dynamic=True)``: faster once compiled, at
    seconds to a minute or more of compiling in each process (less with a warm inductor cache), and the
    log-probs move in their last bits, so true is part of a run's key (docs/benchmarks.md)."""
    lr: float = 1e-3
    """AdamW learning rate (the paper's 1e-6 is for a 1.5B model; a tiny model needs far more)."""
    lr_schedule: str = "linear"
    """constant, or linear: at iteration i of n the rate is lr x (1 - (i - 1) / n), annealed toward 0 as
    CleanRL's PPO does (``anneal_lr``), so that the last iterations move the policy little."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    clip_ratio: float = 0.2
    """PPO clip range epsilon of Eq. 1."""
    clip_ratio_c: float | None = 3.0
    """Dual-clip constant (> 1) bounding the loss of negative advantages (verl's 3.0); None disables it."""
    kl_coef: float = 0.1
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
    estimated_cpu_minutes: float = 7.5
    """Wall-clock estimate of one run on 2 CPU cores, used by sweep --dry-run."""
    estimated_gpu_hours: float = 0.0
    """GPU-hour estimate of one run (paper preset), used by sweep --dry-run."""

    def __post_init__(self) -> None:
        check_int("trainer.iterations", self.iterations, 1)
        check_int("trainer.tasks_per_iteration", self.tasks_per_iteration, 1)
        check_int("trainer.group_size", self.group_size, 2, why=" (group normalisation needs two rollouts)")
        check_int("trainer.ppo_epochs", self.ppo_epochs, 1)
        check_int("trainer.minibatch_size", self.minibatch_size, 1)
        check_choice("trainer.update", self.update, UPDATES)
        check_choice("trainer.last_layer", self.last_layer, LAST_LAYERS)
        check_bool("trainer.compile", self.compile)
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
        reject_fields("trainer", values, cls)
        bc = values.pop("bc", None) or {}
        reject_fields("trainer.bc", bc, BehaviourCloningConfig)
        return cls(**values, bc=BehaviourCloningConfig(**bc))
