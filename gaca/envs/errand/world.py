"""Procedural generation of one errand: objects to choose from, a route of receptacles, a goal."""

from __future__ import annotations

import random
from dataclasses import dataclass

from gaca.envs.errand.house import MAX_NUMBER, WALK_NAMES, name
from gaca.envs.errand.knobs import ErrandKnobs
from gaca.envs.household.lexicon import FILL_TYPES, GOAL_TYPES, OBJECT_TYPES, RECEPTACLE_TYPES

USES = {
    "apple": "snack", "bread": "toast", "egg": "omelette", "lettuce": "salad", "potato": "mash",
    "tomato": "sauce", "bowl": "soup", "cup": "tea", "mug": "coffee", "pan": "frying", "plate": "dinner",
    "pot": "stew", "fork": "eating", "knife": "cutting", "ladle": "serving", "spatula": "flipping",
    "spoon": "stirring", "alarmclock": "waking", "book": "reading", "cd": "music", "cellphone": "calling",
    "creditcard": "paying", "keychain": "locking", "pen": "writing", "pencil": "sketching",
    "remotecontrol": "channels", "statue": "decor", "vase": "flowers", "watch": "timekeeping",
    "cloth": "dusting", "soapbar": "washing", "sponge": "scrubbing", "towel": "drying",
}  # fmt: skip
"""Object type -> the one word an indirect instruction (``ErrandKnobs.indirect``) names it by."""
INDIRECT_WORDS = ("something", "for")
"""The words an indirect instruction adds to the vocabulary besides ``USES``' values."""


@dataclass(frozen=True)
class ErrandTask:
    """What the agent must fetch, what it chooses among, and the receptacles it walks through."""

    instruction: str
    """e.g. "your task is to : put a mug in cabinet ." """
    target_type: str
    objects: tuple[str, ...]
    """The objects on the start receptacle, sorted by name; one of them has ``target_type``."""
    start: str
    """The receptacle the episode starts at (holding ``objects``)."""
    routes: tuple[tuple[str, ...], ...]
    """One route per end: the receptacles walked through from the start to ``ends[b]``, in order."""
    sides: tuple[tuple[str, ...], ...]
    """Dead ends seen at each stop of a route (route_length tuples, the same on every route)."""
    goal: str
    """The receptacle the target must be put in/on; one of ``ends``."""
    ends: tuple[str, ...]
    """Where the routes lead (sorted; ``goal`` and ``num_goals - 1`` others of other types): with more
    than one, heading for the right one at the start is the errand's second pivot."""

    @property
    def route(self) -> tuple[str, ...]:
        """The route to the goal."""
        return self.routes[self.ends.index(self.goal)]


def _house_layout(
    length: int, num_side: int, num_routes: int
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """``num_routes`` routes of ``length`` stops and the dead ends at each stop: one fixed house for every
    task, as in bsuite's umbrella chain, so that the walks are routine (learned once, never read off the
    screen) and the tasks differ only in what is to be fetched and where it goes."""
    rng = random.Random(f"errand-house/{length}/{num_side}")
    names = list(WALK_NAMES)
    rng.shuffle(names)
    routes = tuple(tuple(names[b * length : (b + 1) * length]) for b in range(num_routes))
    rest = names[num_routes * length :]
    sides = tuple(tuple(rest[k * num_side : (k + 1) * num_side]) for k in range(length))
    return routes, sides


def generate_task(rng: random.Random, knobs: ErrandKnobs) -> ErrandTask:
    """Draw the target, the look-alike decoys, the start receptacle, the goal type and the other ends;
    the routes and their dead ends are the house's (``_house_layout``): route b leads to ``ends[b]``."""
    kinds = rng.sample(OBJECT_TYPES[: knobs.num_types], knobs.num_choices)
    target = kinds[0]
    objects = tuple(sorted(name(kind, 1) for kind in kinds))
    goal_type = rng.choice(GOAL_TYPES)
    start_type = rng.choice([t for t in sorted(set(FILL_TYPES)) if t != goal_type])
    routes, sides = _house_layout(knobs.route_length, knobs.num_side, knobs.num_goals)
    others = rng.sample([t for t in GOAL_TYPES if t not in (goal_type, start_type)], knobs.num_goals - 1)
    where = "in" if goal_type in ("cabinet", "drawer", "garbagecan") else "on"
    wanted = f"something for {USES[target]}" if knobs.indirect else f"a {target}"
    return ErrandTask(
        instruction=f"your task is to : put {wanted} {where} {goal_type} .",
        target_type=target,
        objects=objects,
        start=name(start_type, 1),
        routes=routes,
        sides=sides,
        goal=name(goal_type, 1),
        ends=tuple(sorted(name(kind, 1) for kind in (goal_type, *others))),
    )


def vocabulary_names() -> set[str]:
    """Every receptacle and object name a task can hold."""
    return {name(kind, n) for kind in RECEPTACLE_TYPES for n in range(1, MAX_NUMBER + 1)} | {
        name(kind, 1) for kind in OBJECT_TYPES
    }
