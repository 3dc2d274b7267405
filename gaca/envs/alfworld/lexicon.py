"""The household family's names in ALFWorld's own vocabulary: object classes, task types, what fits where.

Everything ALFWorld-specific comes from the installed ``alfworld`` package (``alfworld.gen.constants``
and ``alfworld.gen.goal_library``), so generated games follow the same rules as the official ones.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType

from gaca.envs.household.lexicon import TASK_TREATMENT
from gaca.envs.household.world import HouseholdTask

ALFRED_TASK_TYPE = {
    "pick_and_place": "pick_and_place_simple",
    "pick_clean_then_place": "pick_clean_then_place_in_recep",
    "pick_heat_then_place": "pick_heat_then_place_in_recep",
    "pick_cool_then_place": "pick_cool_then_place_in_recep",
    "look_at_obj_in_light": "look_at_obj_in_light",
    "pick_two_obj_and_place": "pick_two_obj_and_place",
}
"""The household task type -> ALFWorld's task type (the ``task_type`` of an official traj_data.json)."""

_RENAMED = {"sponge": "DishSponge"}
"""Household types whose ALFWorld class is not the type's own name."""

_ABILITY = {"clean": "Cleanable", "heat": "Heatable", "cool": "Coolable"}
"""The treatment -> ALFWorld's name for the objects that allow it."""


def import_alfworld(module: str) -> ModuleType:
    """Import ``module`` of the alfworld package (an optional extra, so imported on first use).

    Importing any part of alfworld sets ``$ALFWORLD_DATA`` to ``~/.cache/alfworld`` (and creates that
    folder) when it is unset; the variable is put back so that a config composed later in this process
    does not take that empty folder for the official games.
    """
    before = os.environ.get("ALFWORLD_DATA")
    try:
        return importlib.import_module(module)
    finally:
        if before is None:
            os.environ.pop("ALFWORLD_DATA", None)
        else:
            os.environ["ALFWORLD_DATA"] = before


@functools.cache
def constants() -> ModuleType:
    """``alfworld.gen.constants``: ALFWorld's object classes and which objects fit where."""
    return import_alfworld("alfworld.gen.constants")


def alfred_class(household_type: str) -> str:
    """ALFWorld's class name of a household object or receptacle type, e.g. "sinkbasin" -> "SinkBasin"."""
    if household_type in _RENAMED:
        return _RENAMED[household_type]
    return constants().OBJECTS_LOWER_TO_UPPER[household_type]


def can_contain(receptacle_type: str, object_type: str) -> bool:
    """Whether ALFWorld lets an object of this type be put in or on a receptacle of that type."""
    allowed = constants().VAL_RECEPTACLE_OBJECTS.get(alfred_class(receptacle_type), ())
    return alfred_class(object_type) in allowed


def allows(object_type: str, ability: str) -> bool:
    """Whether ALFWorld lets an object of this type be "Cleanable", "Heatable", "Coolable" or "Toggleable"."""
    return alfred_class(object_type) in constants().VAL_ACTION_OBJECTS[ability]


def is_openable(receptacle_type: str) -> bool:
    return alfred_class(receptacle_type) in constants().OPENABLE_CLASS_SET


def is_movable_receptacle(object_type: str) -> bool:
    """Bowls, cups, mugs, pans, plates, pots: objects that ALFWorld marks as receptacle objects."""
    return alfred_class(object_type) in constants().MOVABLE_RECEPTACLES_SET


def is_playable(task: HouseholdTask) -> bool:
    """Whether ALFWorld's rules allow the task's goal: the goal receptacle can hold the target and the
    target can be cleaned, heated or cooled as asked (household's pairings are looser than ALFWorld's)."""
    target = task.target_type
    if task.goal_type is not None and not can_contain(task.goal_type, target):
        return False
    treatment = TASK_TREATMENT.get(task.task_type)
    return treatment is None or allows(target, _ABILITY[treatment])
