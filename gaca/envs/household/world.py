"""Procedural generation of one household task: a room of receptacles and objects, and a goal."""

from __future__ import annotations

import random
from dataclasses import dataclass

from gaca.envs.household.knobs import HouseholdKnobs
from gaca.envs.household.lexicon import (
    FILL_TYPES,
    GOAL_TYPES,
    LAMP_HOSTS,
    LAMP_TYPES,
    OBJECT_TYPES,
    OPENABLE,
    START_RECEPTACLES,
    TASK_OBJECTS,
    TASK_TREATMENT,
    TREATED_ADJECTIVE,
    TREATMENT_APPLIANCE,
)

MIDDLE = -1
"""Location of the agent before its first "go to": the middle of the room."""
HELD = -1
"""Receptacle index of an object the agent holds."""


@dataclass(frozen=True)
class HouseholdTask:
    """The static part of a task: what the room holds at the start and what must be achieved.

    Receptacles and objects are sorted by name, so that every listing of them is canonical.
    """

    task_type: str
    """One of ALFWorld's six task types (lexicon.TASK_TYPES)."""
    instruction: str
    """e.g. "your task is to : put a clean mug in cabinet ." """
    target_type: str
    """The object type the task is about."""
    goal_type: str | None
    """The receptacle type to place the target(s) in; None for look_at_obj_in_light."""
    treatment: str | None
    """clean, heat or cool for the pick_*_then_place tasks, else None."""
    receptacles: tuple[str, ...]
    """Receptacle names, e.g. "cabinet 2"."""
    receptacle_types: tuple[str, ...]
    objects: tuple[str, ...]
    """Object names, e.g. "mug 1"."""
    object_types: tuple[str, ...]
    start_receptacle: tuple[int, ...]
    """Receptacle index each object starts in."""
    start_closed: tuple[bool, ...]
    """Whether each receptacle starts closed."""
    lamp: str | None
    """The lamp's name ("desklamp 1"), if the room has a lamp table; lamps are used, never taken."""
    lamp_receptacle: int
    """Index of the receptacle the lamp stands on, -1 without a lamp."""


def generate_task(rng: random.Random, knobs: HouseholdKnobs) -> HouseholdTask:
    """Draw a task type, its target and goal, then a room that holds everything the task needs."""
    task_type = rng.choice(knobs.task_types)
    target = rng.choice(TASK_OBJECTS[task_type])
    treatment = TASK_TREATMENT.get(task_type)
    goal_type = None if task_type == "look_at_obj_in_light" else rng.choice(GOAL_TYPES)
    start_type = rng.choice([t for t in START_RECEPTACLES[target] if t != goal_type])

    required = [start_type]
    if goal_type is not None:
        required.append(goal_type)
    if treatment is not None:
        required.append(TREATMENT_APPLIANCE[treatment])
    if task_type == "look_at_obj_in_light":
        required.append(rng.choice(LAMP_HOSTS))
    types = list(dict.fromkeys(required))
    types += [rng.choice(FILL_TYPES) for _ in range(knobs.num_receptacles - len(types))]
    rooms = _numbered(types)
    receptacle_types = tuple(t for t, _ in rooms)

    num_targets = 2 if task_type == "pick_two_obj_and_place" else 1
    others = [t for t in OBJECT_TYPES if t != target]
    object_kinds = [target] * num_targets + [rng.choice(others) for _ in range(knobs.num_distractors)]
    objects = _numbered(object_kinds)
    receptacles_of_type: dict[str, list[int]] = {}
    for r, t in enumerate(receptacle_types):
        receptacles_of_type.setdefault(t, []).append(r)
    start_receptacle = []
    for kind, _ in objects:
        allowed = [t for t in START_RECEPTACLES[kind] if not (kind == target and t == goal_type)]
        places = [r for t in allowed for r in receptacles_of_type.get(t, ())]
        start_receptacle.append(rng.choice(places or range(len(rooms))))

    lamp_hosts = [r for r, t in enumerate(receptacle_types) if t in LAMP_HOSTS]
    lamp_receptacle = rng.choice(lamp_hosts) if lamp_hosts else -1
    lamp = f"{rng.choice(LAMP_TYPES)} 1" if lamp_hosts else None
    start_closed = tuple(t in OPENABLE and rng.random() < knobs.closed_fraction for t in receptacle_types)

    return HouseholdTask(
        task_type=task_type,
        instruction=_instruction(task_type, target, goal_type, treatment, lamp),
        target_type=target,
        goal_type=goal_type,
        treatment=treatment,
        receptacles=tuple(f"{t} {n}" for t, n in rooms),
        receptacle_types=receptacle_types,
        objects=tuple(f"{t} {n}" for t, n in objects),
        object_types=tuple(t for t, _ in objects),
        start_receptacle=tuple(start_receptacle),
        start_closed=start_closed,
        lamp=lamp,
        lamp_receptacle=lamp_receptacle,
    )


def _preposition(receptacle_type: str) -> str:
    return "in" if receptacle_type in OPENABLE or receptacle_type == "garbagecan" else "on"


def _numbered(kinds: list[str]) -> list[tuple[str, int]]:
    """Number repeated kinds 1, 2, ... in draw order, then sort by (kind, number)."""
    counts: dict[str, int] = {}
    numbered = []
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
        numbered.append((kind, counts[kind]))
    return sorted(numbered)


def _instruction(task_type: str, target: str, goal_type: str | None, treatment: str | None, lamp: str | None) -> str:
    if task_type == "look_at_obj_in_light":
        assert lamp is not None
        goal = f"look at {target} under the {lamp.split()[0]}"
    else:
        assert goal_type is not None
        where = f"{_preposition(goal_type)} {goal_type}"
        if task_type == "pick_two_obj_and_place":
            goal = f"put two {target} {where}"
        elif treatment is not None:
            goal = f"put a {TREATED_ADJECTIVE[treatment]} {target} {where}"
        else:
            goal = f"put a {target} {where}"
    return f"your task is to : {goal} ."
