"""One household episode: ALFWorld's commands, wording and goal checks on a generated room."""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable
from typing import cast

from gaca.envs.base import Env, Observation, StepResult
from gaca.envs.household import commands
from gaca.envs.household.lexicon import OPENABLE, TREATMENT_APPLIANCE
from gaca.envs.household.planner import expert_action
from gaca.envs.household.world import HELD, MIDDLE, HouseholdTask

NOTHING_HAPPENS = "nothing happens ."

_APPLIANCE_VERB = {appliance: verb for verb, appliance in TREATMENT_APPLIANCE.items()}

Handler = Callable[["HouseholdEnv", int], str]


class HouseholdEnv(Env):
    """The agent walks between receptacles, opens them, carries one object at a time and uses
    appliances and lamps. Every admissible command maps to a handler; anything else is invalid.

    An observation depends only on the command just taken and the state it led to (no history,
    no counters), so rollouts of one task that meet in the same situation share an anchor.
    State: ``location`` (receptacle index or MIDDLE), ``held`` (object index, -1 for none),
    ``closed`` and ``contents`` per receptacle, ``where`` (receptacle index or HELD),
    ``is_clean`` and ``temperature`` per object, and ``lamp_on``.
    """

    def __init__(self, task_id: int, task: HouseholdTask, horizon: int, invalid_penalty: float) -> None:
        self.task_id = task_id
        self.task = task
        self.horizon = horizon
        self.invalid_penalty = invalid_penalty
        names = task.receptacles
        self._openable = [t in OPENABLE for t in task.receptacle_types]
        self._appliance_verb = [_APPLIANCE_VERB.get(t) for t in task.receptacle_types]
        self._go_to_names = [commands.go_to(name) for name in names]
        self._go_to_commands = {command: (HouseholdEnv._go_to, r) for r, command in enumerate(self._go_to_names)}
        self._room_text = f"you are in the middle of a room . looking quickly around you , you see {_listing(names)} ."
        self.target_objects = [o for o, t in enumerate(task.object_types) if t == task.target_type]
        self._goal_reached = {
            "look_at_obj_in_light": self._target_in_light,
            "pick_two_obj_and_place": self._two_targets_placed,
        }.get(task.task_type, self._target_placed)

    # -- episode --------------------------------------------------------------------------------

    def reset(self) -> Observation:
        task = self.task
        self.location = MIDDLE
        self.held = -1
        self.closed = list(task.start_closed)
        self.where = list(task.start_receptacle)
        self.contents: list[list[int]] = [[] for _ in task.receptacles]
        for obj, receptacle in enumerate(self.where):
            self.contents[receptacle].append(obj)
        self.is_clean = [False] * len(task.objects)
        self.temperature = [""] * len(task.objects)
        self.lamp_on = False
        self.steps = 0
        self.done = False
        self._views: list[str | None] = [None] * len(task.receptacles)
        self._observe(self._room_text)
        return self.observation

    def step(self, action: str) -> StepResult:
        if self.done:
            raise RuntimeError(f"household task {self.task_id}: step() after the episode ended; call reset()")
        self.steps += 1
        command = self._commands.get(action)
        if command is None:
            previous = self.observation
            self.observation = Observation(NOTHING_HAPPENS, NOTHING_HAPPENS, previous.task, previous.admissible)
            self.done = self.steps >= self.horizon
            return StepResult(self.observation, -self.invalid_penalty, self.done, False, True)
        handler, argument = command
        self._observe(handler(self, argument))
        won = self._goal_reached()
        self.done = won or self.steps >= self.horizon
        return StepResult(self.observation, 1.0 if won else 0.0, self.done, won, False, 1.0 if won else 0.0)

    def expert_action(self) -> str:
        return expert_action(self)

    def _observe(self, text: str) -> None:
        """Show ``text`` and collect the commands admissible in the new state."""
        task = self.task
        here = self.location
        admissible: dict[str, tuple[Handler, int]] = dict(self._go_to_commands)
        if here != MIDDLE:
            del admissible[self._go_to_names[here]]
            name = task.receptacles[here]
            reachable = not self.closed[here]
            if self._openable[here]:
                if reachable:
                    admissible[commands.close(name)] = (HouseholdEnv._close, here)
                else:
                    admissible[commands.open_(name)] = (HouseholdEnv._open, here)
            if reachable:
                for obj in self.contents[here]:
                    admissible[commands.take(task.objects[obj], name)] = (HouseholdEnv._take, obj)
            if self.held >= 0:
                held = task.objects[self.held]
                if reachable:
                    admissible[commands.put(held, name)] = (HouseholdEnv._put, here)
                verb = self._appliance_verb[here]
                if verb is not None:
                    admissible[commands.treat(verb, held, name)] = (HouseholdEnv._treat, here)
            if here == task.lamp_receptacle and not self.lamp_on:  # so the room has a lamp
                admissible[commands.use(cast(str, task.lamp))] = (HouseholdEnv._use, here)
            admissible[commands.examine(name)] = (HouseholdEnv._examine, here)
        admissible[commands.INVENTORY] = (HouseholdEnv._inventory, 0)
        admissible[commands.LOOK] = (HouseholdEnv._look, 0)
        self._commands = admissible
        self.observation = Observation(text, text, task.instruction, tuple(admissible))

    # -- command handlers: change the state, return the observation text -------------------------

    def _go_to(self, receptacle: int) -> str:
        self.location = receptacle
        return f"you arrive at {self.task.receptacles[receptacle]} . {self._view(receptacle)}"

    def _open(self, receptacle: int) -> str:
        self.closed[receptacle] = False
        self._views[receptacle] = None
        return f"you open the {self.task.receptacles[receptacle]} . {self._view(receptacle)}"

    def _close(self, receptacle: int) -> str:
        self.closed[receptacle] = True
        self._views[receptacle] = None
        return f"you close the {self.task.receptacles[receptacle]} ."

    def _take(self, obj: int) -> str:
        receptacle = self.where[obj]
        self.contents[receptacle].remove(obj)
        self._views[receptacle] = None
        self.where[obj] = HELD
        self.held = obj
        return f"you pick up the {self.task.objects[obj]} from the {self.task.receptacles[receptacle]} ."

    def _put(self, receptacle: int) -> str:
        obj = self.held
        insort(self.contents[receptacle], obj)
        self._views[receptacle] = None
        self.where[obj] = receptacle
        self.held = -1
        return f"you put the {self.task.objects[obj]} in/on the {self.task.receptacles[receptacle]} ."

    def _treat(self, appliance: int) -> str:
        verb = self._appliance_verb[appliance]
        if verb == "clean":
            self.is_clean[self.held] = True
        else:
            self.temperature[self.held] = "hot" if verb == "heat" else "cool"
        return f"you {verb} the {self.task.objects[self.held]} using the {self.task.receptacles[appliance]} ."

    def _use(self, _: int) -> str:
        self.lamp_on = True
        return f"you turn on the {self.task.lamp} ."

    def _examine(self, receptacle: int) -> str:
        return self._view(receptacle)

    def _inventory(self, _: int) -> str:
        if self.held < 0:
            return "you are not carrying anything ."
        return f"you are carrying : a {self.task.objects[self.held]} ."

    def _look(self, _: int) -> str:
        if self.location == MIDDLE:
            return self._room_text
        return f"you are facing the {self.task.receptacles[self.location]} . next to it , you see nothing ."

    def _view(self, receptacle: int) -> str:
        """What is seen at a receptacle; cached until its contents or openness change."""
        view = self._views[receptacle]
        if view is None:
            task = self.task
            name = task.receptacles[receptacle]
            if self._openable[receptacle] and self.closed[receptacle]:
                view = f"the {name} is closed ."
            else:
                seen = [task.objects[o] for o in self.contents[receptacle]]
                if receptacle == task.lamp_receptacle:
                    seen.append(task.lamp)  # type: ignore[arg-type]
                if self._openable[receptacle]:
                    view = f"the {name} is open . in it , you see {_listing(seen)} ."
                else:
                    view = f"on the {name} , you see {_listing(seen)} ."
            self._views[receptacle] = view
        return view

    # -- goals ----------------------------------------------------------------------------------

    def qualifies(self, obj: int) -> bool:
        """Whether ``obj`` is a target in the state the task asks for (clean, hot, cool or as is)."""
        treatment = self.task.treatment
        if treatment is None:
            return True
        if treatment == "clean":
            return self.is_clean[obj]
        return self.temperature[obj] == ("hot" if treatment == "heat" else "cool")

    def in_goal_receptacle(self, obj: int) -> bool:
        receptacle = self.where[obj]
        return receptacle >= 0 and self.task.receptacle_types[receptacle] == self.task.goal_type

    def _target_placed(self) -> bool:
        return any(self.in_goal_receptacle(o) and self.qualifies(o) for o in self.target_objects)

    def _two_targets_placed(self) -> bool:
        first, second = self.target_objects
        return self.in_goal_receptacle(first) and self.where[first] == self.where[second]

    def _target_in_light(self) -> bool:
        return self.lamp_on and self.held in self.target_objects and self.location == self.task.lamp_receptacle


def _listing(names: list[str] | tuple[str, ...]) -> str:
    """ALFWorld's enumeration: "nothing", "a mug 1", "a mug 1 , and a cup 2", "a x , a y , and a z"."""
    if not names:
        return "nothing"
    if len(names) == 1:
        return f"a {names[0]}"
    return " , ".join(f"a {name}" for name in names[:-1]) + f" , and a {names[-1]}"
