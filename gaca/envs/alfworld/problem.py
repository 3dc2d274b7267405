"""A household task written as a PDDL problem for ALFWorld's own domain, goal library and grammar.

The room, its objects, what is open and where everything starts are the household task's; the
facts, the goals and the instruction are ALFWorld's (``alfworld/data/alfred.pddl``,
``alfworld.gen.goal_library``), so the TextWorld engine plays it exactly as it plays an official game.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gaca.envs.alfworld.lexicon import (
    ALFRED_TASK_TYPE,
    alfred_class,
    allows,
    can_contain,
    import_alfworld,
    is_movable_receptacle,
    is_openable,
)
from gaca.envs.household.world import HouseholdTask

AGENT = "agent1"
START = "loc_bar_start"
"""The agent's starting location: no receptacle stands there ("you are in the middle of a room")."""
DOMAIN_OBJECT_CLASSES = ("ButterKnife", "Knife")
DOMAIN_RECEPTACLE_CLASSES = ("Fridge", "Microwave", "SinkBasin")
"""Classes whose type constants (KnifeType, ...) ALFWorld's domain names in its actions; a problem declares them."""
UNKNOWN_GOAL = "UNKNOWN GOAL"
"""The placeholder of ALFWorld's grammar that the task description replaces (as alfworld-generate does)."""
PROBLEM_NAME = "gaca_household"


def game_content(task: HouseholdTask) -> dict[str, str]:
    """What a TextWorld PDDL game file holds for ``task``: ALFWorld's domain, its grammar with the
    task's goal description, and the task's problem (the fields of an official game.tw-pddl)."""
    domain, grammar = domain_and_grammar()
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace(UNKNOWN_GOAL, instruction(task)),
        "pddl_problem": pddl_problem(task),
    }


@functools.cache
def domain_and_grammar() -> tuple[str, str]:
    """The text of ALFWorld's PDDL domain and TextWorld grammar, as shipped in the alfworld package."""
    info = import_alfworld("alfworld.info")
    return Path(info.ALFRED_PDDL_PATH).read_text(), Path(info.ALFRED_TWL2_PATH).read_text()


def entity_ids(names: tuple[str, ...], types: tuple[str, ...]) -> list[str]:
    """PDDL ids that ALFWorld's demangler turns back into ``names`` ("mug 2" -> e.g. "mug_bar_01").

    The demangler numbers the ids of one class in sorted order from the highest number down, so the
    id of number n out of c carries the suffix c - n + 1. Sink basins keep ALFRED's "sink|...|sinkbasin"
    shape because the demangler appends "basin" to any id that contains it.
    """
    counts: dict[str, int] = {}
    for kind in types:
        counts[kind] = counts.get(kind, 0) + 1
    ids = []
    for name, kind in zip(names, types):
        number = int(name.rsplit(" ", 1)[1])
        suffix = f"{counts[kind] - number + 1:02d}"
        cls = alfred_class(kind).lower()
        ids.append(f"sink_bar_{suffix}_bar_sinkbasin" if cls == "sinkbasin" else f"{cls}_bar_{suffix}")
    return ids


def instruction(task: HouseholdTask) -> str:
    """ALFWorld's templated goal description (its task type's first template): "put a clean mug in cabinet"."""
    goal_library = import_alfworld("alfworld.gen.goal_library")
    template = goal_library.gdict[ALFRED_TASK_TYPE[task.task_type]]["templates"][0]
    return template.format(**_goal_arguments(task, lower=True))


def pddl_problem(task: HouseholdTask) -> str:
    """The PDDL problem of ``task`` for ALFWorld's domain, its goal taken from ALFWorld's goal library."""
    goal_library = import_alfworld("alfworld.gen.goal_library")
    receptacles = entity_ids(task.receptacles, task.receptacle_types)
    objects = entity_ids(task.objects, task.object_types)
    lamp_names = (task.lamp,) if task.lamp is not None else ()  # a lamp is an object that is used, never taken
    lamp_types = tuple(name.split()[0] for name in lamp_names)
    lamps = entity_ids(lamp_names, lamp_types)
    locations = [f"loc_bar_{index + 1}" for index in range(len(receptacles))]
    object_types = {alfred_class(t) for t in task.object_types + lamp_types}
    receptacle_types = {alfred_class(t) for t in task.receptacle_types}

    declarations = [f"{AGENT} - agent", f"{START} - location"]
    declarations += [f"{location} - location" for location in locations]
    declarations += [f"{r} - receptacle" for r in receptacles]
    declarations += [f"{o} - object" for o in objects + lamps]
    declarations += [f"{t}Type - otype" for t in sorted(object_types | set(DOMAIN_OBJECT_CLASSES))]
    declarations += [f"{t}Type - rtype" for t in sorted(receptacle_types | set(DOMAIN_RECEPTACLE_CLASSES))]

    facts = ["(= (total-cost) 0)", f"(atLocation {AGENT} {START})"]
    for r, (rid, kind) in enumerate(zip(receptacles, task.receptacle_types)):
        facts += [f"(receptacleType {rid} {alfred_class(kind)}Type)", f"(receptacleAtLocation {rid} {locations[r]})"]
        if is_openable(kind):
            facts.append(f"(openable {rid})")
            if not task.start_closed[r]:
                facts.append(f"(opened {rid})")
    fits = {(r, o) for r in set(task.receptacle_types) for o in set(task.object_types) if can_contain(r, o)}
    # What a room starts with fits where it starts (as in ALFRED's scenes), so that nothing taken becomes
    # impossible to put down: household's placements are looser than ALFWorld's table.
    fits |= {(task.receptacle_types[start], kind) for kind, start in zip(task.object_types, task.start_receptacle)}
    facts += [f"(canContain {alfred_class(r)}Type {alfred_class(o)}Type)" for r, o in sorted(fits)]
    for oid, kind, start in zip(objects, task.object_types, task.start_receptacle):
        facts += [
            f"(objectType {oid} {alfred_class(kind)}Type)",
            f"(pickupable {oid})",
            f"(inReceptacle {oid} {receptacles[start]})",
            f"(objectAtLocation {oid} {locations[start]})",
        ]
        abilities = [ability for ability in ("Cleanable", "Heatable", "Coolable") if allows(kind, ability)]
        facts += [f"({ability.lower()} {oid})" for ability in abilities]
        if is_movable_receptacle(kind):
            facts.append(f"(isReceptacleObject {oid})")
        if task.receptacle_types[start] == "fridge":  # ALFWorld counts what starts in a fridge as cool
            facts.append(f"(isCool {oid})")
    for lamp, kind in zip(lamps, lamp_types):
        host = task.lamp_receptacle
        facts += [
            f"(objectType {lamp} {alfred_class(kind)}Type)",
            f"(toggleable {lamp})",
            f"(inReceptacle {lamp} {receptacles[host]})",
            f"(objectAtLocation {lamp} {locations[host]})",
        ]

    goal = goal_library.gdict[ALFRED_TASK_TYPE[task.task_type]]["pddl"].format(**_goal_arguments(task, lower=False))
    goal = goal.replace("#", "-")  # the goal library writes "?o # object" for PDDL's "?o - object"
    lines = [f"(define (problem {PROBLEM_NAME})", "    (:domain alfred)", "    (:objects"]
    lines += [f"        {d}" for d in declarations]
    lines += ["    )", "    (:init"]
    lines += [f"        {f}" for f in facts]
    lines += ["    )", goal.strip()]  # the goal closes the define
    return "\n".join(lines) + "\n"


def _goal_arguments(task: HouseholdTask, lower: bool) -> dict[str, str]:
    """The goal library's placeholders: obj (target class), recep (goal class), toggle (lamp class)."""
    values = {
        "obj": alfred_class(task.target_type),
        "recep": alfred_class(task.goal_type) if task.goal_type is not None else "",
        "toggle": alfred_class(task.lamp.split()[0]) if task.lamp is not None else "",
        "mrecep": "",
    }
    return {k: v.lower() for k, v in values.items()} if lower else values
