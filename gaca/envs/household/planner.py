"""The household expert: a planner that sees the whole state (like ALFWorld's handcoded expert).

It replans from whatever state it is asked about, so it also recovers from a noisy policy's detours;
from the initial state it needs at most 11 steps (pick two, everything closed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gaca.envs.household import commands
from gaca.envs.household.lexicon import TREATMENT_APPLIANCE
from gaca.envs.household.world import MIDDLE

if TYPE_CHECKING:
    from gaca.envs.household.engine import HouseholdEnv


def expert_action(env: HouseholdEnv) -> str:
    """The next command towards the goal from the current state."""
    if env.task.task_type == "look_at_obj_in_light":
        return _examine_in_light(env)
    return _place(env)


def _place(env: HouseholdEnv) -> str:
    task = env.task
    goal = _goal_receptacle(env)
    if env.held < 0:
        return _fetch(env, next(o for o in env.target_objects if not (env.where[o] == goal and env.qualifies(o))))
    if env.held not in env.target_objects:
        return _put_down(env, goal)
    if not env.qualifies(env.held):
        assert task.treatment is not None
        appliance = task.receptacle_types.index(TREATMENT_APPLIANCE[task.treatment])
        if env.location != appliance:
            return commands.go_to(task.receptacles[appliance])
        return commands.treat(task.treatment, task.objects[env.held], task.receptacles[appliance])
    return _deliver(env, goal)


def _examine_in_light(env: HouseholdEnv) -> str:
    task = env.task
    lamp_table = task.lamp_receptacle
    if env.held < 0:
        return _fetch(env, env.target_objects[0])
    if env.held not in env.target_objects:
        return _put_down(env, lamp_table)
    if env.location != lamp_table:
        return commands.go_to(task.receptacles[lamp_table])
    assert task.lamp is not None
    return commands.use(task.lamp)


def _goal_receptacle(env: HouseholdEnv) -> int:
    """The goal-type receptacle already holding the most targets (the first one on a tie)."""
    task = env.task
    candidates = [r for r, t in enumerate(task.receptacle_types) if t == task.goal_type]
    return max(candidates, key=lambda r: (sum(env.where[o] == r for o in env.target_objects), -r))


def _fetch(env: HouseholdEnv, obj: int) -> str:
    task = env.task
    receptacle = env.where[obj]
    if env.location != receptacle:
        return commands.go_to(task.receptacles[receptacle])
    if env.closed[receptacle]:
        return commands.open_(task.receptacles[receptacle])
    return commands.take(task.objects[obj], task.receptacles[receptacle])


def _deliver(env: HouseholdEnv, receptacle: int) -> str:
    task = env.task
    if env.location != receptacle:
        return commands.go_to(task.receptacles[receptacle])
    if env.closed[receptacle]:
        return commands.open_(task.receptacles[receptacle])
    return commands.put(task.objects[env.held], task.receptacles[receptacle])


def _put_down(env: HouseholdEnv, fallback: int) -> str:
    """Put a useless object down where the agent stands (at ``fallback`` if it stands nowhere)."""
    return _deliver(env, fallback if env.location == MIDDLE else env.location)
