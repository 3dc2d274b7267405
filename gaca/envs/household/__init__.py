"""The household family (ALFWorld-style): generated rooms, ALFWorld's wording, commands and task types."""

from gaca.envs.household.engine import HouseholdEnv
from gaca.envs.household.family import HouseholdFamily
from gaca.envs.household.knobs import PRESETS, HouseholdKnobs
from gaca.envs.household.world import HouseholdTask, generate_task

__all__ = ["PRESETS", "HouseholdEnv", "HouseholdFamily", "HouseholdKnobs", "HouseholdTask", "generate_task"]
