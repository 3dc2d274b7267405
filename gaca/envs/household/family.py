"""The household family (ALFWorld-style): registered as "household"."""

from __future__ import annotations

import random

from gaca.envs.base import EnvFamily
from gaca.envs.families import FAMILIES
from gaca.envs.household.engine import HouseholdEnv
from gaca.envs.household.knobs import PRESETS
from gaca.envs.household.lexicon import LAMP_TYPES, OBJECT_TYPES, RECEPTACLE_TYPES, TREATED_ADJECTIVE
from gaca.envs.household.world import HouseholdTask, generate_task
from gaca.envs.text import words

_FIXED_TEXT = (
    "you are in the middle of a room . looking quickly around you , you see nothing , a , and a",
    "you arrive at . the is closed . the is open . in it , you see . on the , you see",
    "you open the . you close the . you pick up the from the . you put the in/on the .",
    "you clean heat cool the using the . you turn on the . nothing happens .",
    "you are carrying : a . you are not carrying anything . you are facing the . next to it , you see",
    "go to open close take from put in/on clean heat cool with use examine inventory look",
    "your task is to : put a two in on look at under the .",
)


@FAMILIES.register("household")
class HouseholdFamily(EnvFamily[HouseholdTask, HouseholdEnv]):
    """Rooms of receptacles and objects with ALFWorld's six task types; horizon 50 by default.

    As in ALFWorld, training and evaluation share instructions but never a whole task (room and goal).
    """

    default_horizon = 50
    knob_presets = PRESETS

    def _generate(self, rng: random.Random) -> HouseholdTask:
        return generate_task(rng, self.knobs)

    def _episode(self, task_id: int, task: HouseholdTask) -> HouseholdEnv:
        return HouseholdEnv(task_id, task, self.horizon, self.cfg.invalid_penalty)

    def vocabulary(self) -> list[str]:
        largest_number = max(self.knobs.num_receptacles, self.knobs.num_distractors + 2)
        vocabulary = {w for text in _FIXED_TEXT for w in words(text)}
        vocabulary |= set(RECEPTACLE_TYPES + OBJECT_TYPES + LAMP_TYPES) | set(TREATED_ADJECTIVE.values())
        vocabulary |= {str(n) for n in range(1, largest_number + 1)}
        return sorted(vocabulary)
