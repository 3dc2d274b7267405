"""The estimator's input as one type: the step rows of a batch, whichever backend collected them.

The CPU backend builds it from its rollouts (``gaca.backends.cpu.rollout``), the verl plugin from a
verl batch (``gaca.backends.verl.agent.batch``); both call ``StepRows.advantages``, so the estimator is
called in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from gaca.estimators.batch import ArrayLike
from gaca.estimators.config import AdvantageConfig
from gaca.estimators.core import AdvantageOutput, compute_advantages


@dataclass(frozen=True)
class StepRows:
    """One entry per agent step, [N] each (docs/estimator.md, "Input"; the fields of ``compute_advantages``)."""

    group: ArrayLike
    """Prompt-group id: the G rollouts of one task share it."""
    traj: ArrayLike
    """Trajectory id, unique across the batch."""
    step: ArrayLike
    """Time index t within its trajectory, 0..T-1."""
    reward: ArrayLike
    """r_t, the invalid-action penalty included on the rows whose action was invalid."""
    invalid: ArrayLike | None = None
    """True where the action was invalid."""
    anchor: ArrayLike | None = None
    """The observation shown before the action (gigpo, gaca)."""
    nll: ArrayLike | None = None
    """H_t: the action's mean token negative log-likelihood under pi_old (Eq. 4)."""
    copies: ArrayLike | None = None
    """Padding copies of each row elsewhere in the caller's batch (verl-agent's ``adjust_batch``)."""

    def __len__(self) -> int:
        return len(self.reward)

    def advantages(self, config: AdvantageConfig, invalid_penalty: float | None) -> AdvantageOutput:
        """``compute_advantages`` of these rows (paper Eqs. 2-8); ``invalid_penalty`` is the p inside
        each invalid row's reward (given when ``invalid`` is)."""
        return compute_advantages(
            group=self.group,
            traj=self.traj,
            step=self.step,
            reward=self.reward,
            anchor=self.anchor,
            nll=self.nll,
            invalid=self.invalid,
            invalid_penalty=invalid_penalty if self.invalid is not None else None,
            config=config,
            copies=self.copies,
        )
