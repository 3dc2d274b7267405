"""The alfworld family's knobs: the household generator's, plus the held-out split of the official games."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gaca.envs.household.knobs import PRESETS as HOUSEHOLD_PRESETS
from gaca.envs.household.knobs import HouseholdKnobs

EVAL_SPLITS = ("valid_seen", "valid_unseen")


@dataclass(frozen=True)
class AlfworldKnobs(HouseholdKnobs):
    """Generated games: the household room knobs. Official games: only task_types and eval_split apply."""

    eval_split: str = "valid_seen"
    """Official games: the held-out split; valid_seen is verl-agent's eval_in_distribution, valid_unseen
    its eval_out_of_distribution."""

    def validate(self) -> None:
        super().validate()
        if self.eval_split not in EVAL_SPLITS:
            raise ValueError(f"env.knobs.eval_split must be one of {list(EVAL_SPLITS)}, got {self.eval_split!r}")


PRESETS = {
    name: AlfworldKnobs(**{f.name: getattr(knobs, f.name) for f in dataclasses.fields(knobs)})
    for name, knobs in HOUSEHOLD_PRESETS.items()
}
"""The household presets: easy (a tiny policy learns it on CPU) and paper (ALFWorld-sized rooms)."""
