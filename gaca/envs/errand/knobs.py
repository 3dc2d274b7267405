"""The errand family's knobs and presets."""

from __future__ import annotations

from dataclasses import dataclass

from gaca.envs.errand.house import WALK_NAMES
from gaca.envs.household.lexicon import OBJECT_TYPES
from gaca.envs.knobs import check_fraction, check_int


@dataclass(frozen=True)
class ErrandKnobs:
    """How many objects the pivotal choice is among, how long the walk is and how many dead ends it has."""

    num_choices: int = 3
    """Objects on the start receptacle; exactly one has the type the task asks for."""
    route_length: int = 12
    """Receptacles walked through between the start and the goal (the routine part of the episode)."""
    num_side: int = 1
    """Dead-end receptacles seen at every stop of the route (a detour costs two steps)."""
    num_goals: int = 1
    """Receptacles the start leads to, each by its own route; the task names one. 1: one route, to the
    goal; more: which end to head for is a second early pivot (as an ALFWorld task asks for an object and
    for the receptacle it goes in), decided as many routine steps before the outcome as the first."""
    num_types: int = 8
    """Object types the target and the look-alikes are drawn from (the first of household's types)."""
    show_held: int = 0
    """1: every arrival text says what the agent carries, so the walk's anchors split by the early choice
    and step-level and episode-level advantages carry different information (docs/testbed.md);
    0: as ALFWorld, only "inventory" tells."""
    indirect: int = 0
    """1: the instruction names what the object is for (``world.USES``: "something for coffee"), not its
    type, so which type a task wants is an association met one type at a time, num_types of them,
    instead of one rule (take the object named in the task) that serves every type; 0: it names the
    type ("a mug"). The tasks are the same draws either way; only the instruction's words differ."""
    prior_accuracy: float = 0.0
    """How often the base policy takes the target at the choice (chance: 1 / num_choices). After cloning
    the walk, the clone is trained (``trainer.bc.prior_steps``) on first actions that name the target
    this often (else a look-alike), so that it reads the task a little, as an instruct model does; 0: no
    such stage, the clone chooses at chance. RL from a clone at chance does not find the choice within
    the CPU budget (docs/testbed.md)."""

    def validate(self) -> None:
        check_int("num_choices", self.num_choices, 2, 8)
        check_int("num_types", self.num_types, self.num_choices, len(OBJECT_TYPES))
        check_int("num_goals", self.num_goals, 1, 4)
        check_int("route_length", self.route_length, 1, 60)
        check_int("num_side", self.num_side, 0, 4)
        check_int("show_held", self.show_held, 0, 1)
        check_int("indirect", self.indirect, 0, 1)
        if (self.num_goals + self.num_side) * self.route_length > len(WALK_NAMES):
            raise ValueError(
                f"env.knobs: (num_goals + num_side) x route_length receptacles must be at most {len(WALK_NAMES)} "
                f"(the house's), got ({self.num_goals} + {self.num_side}) x {self.route_length}"
            )
        check_fraction("prior_accuracy", self.prior_accuracy)


PRESETS = {
    "easy": ErrandKnobs(
        num_choices=3, route_length=6, num_goals=3, num_side=1, num_types=8, show_held=1, prior_accuracy=0.5
    ),
    "long": ErrandKnobs(
        num_choices=3, route_length=12, num_goals=3, num_side=1, num_types=8, show_held=1, prior_accuracy=0.5
    ),
    "paper": ErrandKnobs(
        num_choices=4, route_length=24, num_goals=3, num_side=2, num_types=12, show_held=1, prior_accuracy=0.5
    ),
}
"""Optimal episodes take route_length + 3 steps: easy 9, long (the ablation default, horizon 40) 15,
paper 27 (ALFWorld-length episodes at horizon 50)."""
