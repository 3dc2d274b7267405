"""One errand episode: take one of the objects at the start, walk the route, choose where it ends, put the
object there."""

from __future__ import annotations

import random

from gaca.envs.base import Env, Observation, StepResult
from gaca.envs.errand.world import ErrandTask
from gaca.envs.household import commands
from gaca.envs.household.engine import NOTHING_HAPPENS, _listing

START = 0
"""Position of the start receptacle; a route's stops are 1..L and its end L + 1."""


class ErrandEnv(Env):
    """The walk of two pivotal choices: the object taken at step 1 and the end headed for at the start
    decide, many routine steps later, whether the final "put" wins. A wrong object can be carried back
    and exchanged, a wrong route walked back, at the price of the walk.

    State: ``position`` (0 start, 1..L the stops of route ``route``, L + 1 its end), ``route`` (index
    into ``task.routes`` and ``task.ends``), ``side`` (index of the dead end the agent stands at, -1 for
    none), ``held`` (object index, -1 for none) and whether each object still lies at the start. With
    one end the start leads straight onto the goal's route; with more, "go to <end>" at the start heads
    onto that end's route. An observation depends only on the command just taken and the state it led
    to, so rollouts of one task that meet in the same situation share an anchor.
    """

    def __init__(self, task_id: int, task: ErrandTask, horizon: int, invalid_penalty: float, show_held: bool) -> None:
        self.task_id = task_id
        self.task = task
        self.horizon = horizon
        self.invalid_penalty = invalid_penalty
        self.show_held = show_held
        self.goal_route = task.ends.index(task.goal)
        self.goal_position = len(task.route) + 1
        self._places = tuple((task.start, *route, end) for route, end in zip(task.routes, task.ends))
        self.target = next(o for o, name in enumerate(task.objects) if name.split()[0] == task.target_type)

    @property
    def places(self) -> tuple[str, ...]:
        """The receptacles of the current route by position: the start, its stops, its end."""
        return self._places[self.route]

    def reset(self) -> Observation:
        self.position = START
        self.route = self.goal_route
        self.side = -1
        self.held = -1
        self.at_start = [True] * len(self.task.objects)
        self.steps = 0
        self.done = False
        self._observe(self._description())
        return self.observation

    def step(self, action: str) -> StepResult:
        if self.done:
            raise RuntimeError(f"errand task {self.task_id}: step() after the episode ended; call reset()")
        self.steps += 1
        command = self._commands.get(action)
        if command is None:
            previous = self.observation
            self.observation = Observation(
                NOTHING_HAPPENS, NOTHING_HAPPENS, previous.task, previous.admissible, previous.commands
            )
            self.done = self.steps >= self.horizon
            return StepResult(self.observation, -self.invalid_penalty, self.done, False, True)
        handler, argument = command
        text, ended = handler(self, argument)
        won = ended and self.placed_right
        self._observe(text)
        self.done = ended or self.steps >= self.horizon
        return StepResult(self.observation, 1.0 if won else 0.0, self.done, won, False, 1.0 if won else 0.0)

    def expert_action(self) -> str:
        """Exchange a wrong object at the start, head for the goal with the target (walking back from a
        wrong route first), put it there."""
        if self.side >= 0:
            return commands.go_to(self.places[self.position])
        carrying_target = self.held == self.target
        if self.position == START:
            if carrying_target:
                return self.head_command(self.goal_route)
            if self.held >= 0:
                return commands.put(self.task.objects[self.held], self.task.start)
            return commands.take(self.task.objects[self.target], self.task.start)
        if carrying_target and self.route == self.goal_route:
            if self.position == self.goal_position:
                return commands.put(self.task.objects[self.held], self.task.goal)
            return commands.go_to(self.places[self.position + 1])
        return commands.go_to(self.places[self.position - 1])

    def demonstration_action(self) -> str:
        """What the base policy is cloned from: the expert's walk, but the object taken at the start and the
        end headed for are drawn uniformly (fixed per task), and whatever is carried is put wherever the
        route ends. The clone walks well and chooses at chance at both pivots: learning them is left to
        RL (and to the prior stage, ``ErrandFamily.prior_choices``)."""
        if self.position == START and self.side < 0:
            if self.held < 0:
                lying = [o for o in range(len(self.task.objects)) if self.at_start[o]]
                chosen = lying[random.Random(f"errand-demo/{self.task_id}").randrange(len(lying))]
                return commands.take(self.task.objects[chosen], self.task.start)
            ends = self.task.ends
            return self.head_command(random.Random(f"errand-demo-end/{self.task_id}").randrange(len(ends)))
        if self.held < 0:
            return self.expert_action()
        if self.side >= 0:
            return commands.go_to(self.places[self.position])
        if self.position == self.goal_position:
            return commands.put(self.task.objects[self.held], self.task.ends[self.route])
        return commands.go_to(self.places[self.position + 1])

    def head_command(self, route: int) -> str:
        """The command that leaves the start onto ``route``: with one route, "go to" its first stop; with
        several, "go to" the end it leads to."""
        if len(self.task.ends) == 1:
            return commands.go_to(self.task.routes[route][0])
        return commands.go_to(self.task.ends[route])

    # -- what the agent sees and may do ----------------------------------------------------------

    def _observe(self, text: str) -> None:
        task, here = self.task, self.position
        admissible: dict[str, tuple] = {}
        if self.side >= 0:
            admissible[commands.go_to(self.places[here])] = (ErrandEnv._go_to, (here, -1))
        else:
            if here > START:
                admissible[commands.go_to(self.places[here - 1])] = (ErrandEnv._go_to, (here - 1, -1))
            if START < here < self.goal_position:
                admissible[commands.go_to(self.places[here + 1])] = (ErrandEnv._go_to, (here + 1, -1))
                for j, side in enumerate(task.sides[here - 1]):
                    admissible[commands.go_to(side)] = (ErrandEnv._go_to, (here, j))
            if here == START:
                for route in range(len(task.ends)):
                    admissible[self.head_command(route)] = (ErrandEnv._head, route)
                if self.held < 0:
                    for o, name in enumerate(task.objects):
                        if self.at_start[o]:
                            admissible[commands.take(name, task.start)] = (ErrandEnv._take, o)
                else:
                    admissible[commands.put(task.objects[self.held], task.start)] = (ErrandEnv._put_back, 0)
            if here == self.goal_position and self.held >= 0:
                admissible[commands.put(task.objects[self.held], self.places[here])] = (ErrandEnv._put_at_end, 0)
        admissible[commands.examine(self._place())] = (ErrandEnv._examine, 0)
        admissible[commands.INVENTORY] = (ErrandEnv._inventory, 0)
        admissible[commands.LOOK] = (ErrandEnv._look, 0)
        self._commands = dict(sorted(admissible.items()))
        self.observation = Observation(text, text, task.instruction, tuple(self._commands), self._well_formed())

    def _well_formed(self) -> tuple[str, ...]:
        """The admissible commands plus the invalid ones an agent plausibly writes here: heading for the
        goal from a stop that does not lead there, putting the object down on the way, taking a second
        object with full hands."""
        task, here = self.task, self.position
        invalid = []
        if self.side < 0 and START < here < self.goal_position - 1:
            invalid.append(commands.go_to(task.goal))
        if self.held >= 0 and self.side < 0 and START < here < self.goal_position:
            invalid.append(commands.put(task.objects[self.held], self.places[here]))
        if here == START and self.held >= 0:
            invalid += [commands.take(name, task.start) for o, name in enumerate(task.objects) if self.at_start[o]]
        return tuple(sorted({*self._commands, *invalid}))

    def _place(self) -> str:
        if self.side >= 0:
            return self.task.sides[self.position - 1][self.side]
        return self.places[self.position]

    def _description(self) -> str:
        """What is seen where the agent stands: contents, and at the start and route stops the way on."""
        name = self._place()
        if self.side >= 0 or self.position == self.goal_position:
            return f"on the {name} , you see nothing ."
        parts = []
        if self.position == START:
            lying = [n for o, n in enumerate(self.task.objects) if self.at_start[o]]
            parts.append(f"on the {name} , you see {_listing(lying)} .")
        way_on = (
            self.task.ends if self.position == START and len(self.task.ends) > 1 else (self.places[self.position + 1],)
        )
        parts.append(f"the way on leads to {' , '.join(way_on)} .")
        if self.show_held and self.position != START:
            parts.append(self._inventory(0)[0])
        return " ".join(parts)

    # -- command handlers: change the state, return (observation text, episode ended) ------------

    def _go_to(self, where: tuple[int, int]) -> tuple[str, bool]:
        self.position, self.side = where
        return f"you arrive at {self._place()} . {self._description()}", False

    def _head(self, route: int) -> tuple[str, bool]:
        self.route = route
        return self._go_to((1, -1))

    def _take(self, obj: int) -> tuple[str, bool]:
        self.held = obj
        self.at_start[obj] = False
        return f"you pick up the {self.task.objects[obj]} from the {self.task.start} .", False

    def _put_back(self, _: int) -> tuple[str, bool]:
        obj, self.held = self.held, -1
        self.at_start[obj] = True
        return f"you put the {self.task.objects[obj]} in/on the {self.task.start} .", False

    def _put_at_end(self, _: int) -> tuple[str, bool]:
        self.placed_right = self.held == self.target and self.route == self.goal_route
        return f"you put the {self.task.objects[self.held]} in/on the {self.places[self.position]} .", True

    def _examine(self, _: int) -> tuple[str, bool]:
        return self._description(), False

    def _inventory(self, _: int) -> tuple[str, bool]:
        if self.held < 0:
            return "you are not carrying anything .", False
        return f"you are carrying : a {self.task.objects[self.held]} .", False

    def _look(self, _: int) -> tuple[str, bool]:
        return f"you are facing the {self._place()} . {self._description()}", False
