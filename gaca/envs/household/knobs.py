"""The household family's difficulty knobs and its two presets."""

from __future__ import annotations

from dataclasses import dataclass

from gaca.envs.household.lexicon import TASK_TYPES
from gaca.envs.knobs import check_fraction, check_int, check_subset


@dataclass(frozen=True)
class HouseholdKnobs:
    """How big a room is and which tasks are drawn."""

    num_receptacles: int = 5
    """Receptacles in a room, including the ones the task needs (goal, appliance, lamp table)."""
    num_distractors: int = 2
    """Objects in the room besides the task's target object(s)."""
    closed_fraction: float = 0.5
    """Chance that each openable receptacle (cabinet, drawer, fridge, microwave, safe) starts closed."""
    task_types: tuple[str, ...] = TASK_TYPES
    """ALFWorld task types drawn uniformly."""

    def validate(self) -> None:
        check_int("num_receptacles", self.num_receptacles, 3, 40)
        check_int("num_distractors", self.num_distractors, 0, 40)
        check_fraction("closed_fraction", self.closed_fraction)
        check_subset("task_types", self.task_types, TASK_TYPES)


PRESETS = {
    "easy": HouseholdKnobs(
        num_receptacles=4,
        num_distractors=2,
        closed_fraction=0.5,
        task_types=(
            "pick_and_place",
            "pick_clean_then_place",
            "pick_heat_then_place",
            "pick_cool_then_place",
            "look_at_obj_in_light",
        ),
    ),
    "paper": HouseholdKnobs(num_receptacles=20, num_distractors=16, closed_fraction=1.0, task_types=TASK_TYPES),
}
"""easy: a tiny policy learns it on CPU and a random policy sometimes succeeds; paper: ALFWorld-sized rooms."""
