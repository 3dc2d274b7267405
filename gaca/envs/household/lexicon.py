"""ALFWorld's names: receptacle and object types, where objects start, and the six task types."""

from __future__ import annotations

OPENABLE = ("cabinet", "drawer", "fridge", "microwave", "safe")
"""Receptacles that can be closed; their contents are hidden and unreachable until opened."""

RECEPTACLE_TYPES = OPENABLE + (
    "armchair", "bed", "coffeemachine", "coffeetable", "countertop", "desk", "diningtable",
    "dresser", "garbagecan", "shelf", "sidetable", "sinkbasin", "sofa", "stoveburner", "toaster",
)  # fmt: skip

FILL_TYPES = RECEPTACLE_TYPES + ("cabinet", "cabinet", "drawer", "drawer", "countertop", "shelf")
"""Types drawn to fill a room; cabinets and drawers come up more often, as in ALFWorld's rooms."""

GOAL_TYPES = ("cabinet", "countertop", "desk", "diningtable", "drawer", "dresser", "garbagecan", "shelf", "sidetable")
"""Receptacle types a placing task can name as its destination."""

LAMP_HOSTS = ("desk", "dresser", "sidetable")
"""Receptacles a lamp stands on."""
LAMP_TYPES = ("desklamp", "floorlamp")

TREATMENT_APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
"""The verb that changes an object's state -> the receptacle type it is done with."""

_FOOD = ("apple", "bread", "egg", "lettuce", "potato", "tomato")
_DISHES = ("bowl", "cup", "mug", "pan", "plate", "pot")
_UTENSILS = ("fork", "knife", "ladle", "spatula", "spoon")
_SMALL = ("alarmclock", "book", "cd", "cellphone", "creditcard", "keychain", "pen", "pencil",
          "remotecontrol", "statue", "vase", "watch")  # fmt: skip
_BATHROOM = ("cloth", "soapbar", "sponge", "towel")

OBJECT_TYPES = _FOOD + _DISHES + _UTENSILS + _SMALL + _BATHROOM

START_RECEPTACLES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_FOOD, ("countertop", "diningtable", "fridge", "microwave")),
    **dict.fromkeys(_DISHES, ("cabinet", "countertop", "diningtable", "shelf", "sinkbasin", "stoveburner")),
    **dict.fromkeys(_UTENSILS, ("countertop", "diningtable", "drawer", "sinkbasin")),
    **dict.fromkeys(_SMALL, ("coffeetable", "desk", "drawer", "dresser", "safe", "shelf", "sidetable", "sofa")),
    **dict.fromkeys(_BATHROOM, ("cabinet", "countertop", "drawer", "garbagecan", "shelf")),
}
"""Where an object of each type may start: the prior that makes 'where to look' learnable."""

TASK_TYPES = (
    "pick_and_place",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)
"""ALFWorld's six task types."""

TASK_TREATMENT = {"pick_clean_then_place": "clean", "pick_heat_then_place": "heat", "pick_cool_then_place": "cool"}

TASK_OBJECTS: dict[str, tuple[str, ...]] = {
    "pick_and_place": OBJECT_TYPES,
    "pick_clean_then_place": _FOOD + _DISHES + _UTENSILS + ("cloth", "soapbar", "sponge"),
    "pick_heat_then_place": ("apple", "bread", "cup", "egg", "mug", "plate", "potato", "tomato"),
    "pick_cool_then_place": _FOOD + _DISHES,
    "look_at_obj_in_light": _SMALL + ("bowl",),
    "pick_two_obj_and_place": OBJECT_TYPES,
}
"""The object types each task type asks for (ALFWorld's pairings, trimmed to these types)."""

TREATED_ADJECTIVE = {"clean": "clean", "heat": "hot", "cool": "cool"}
