"""The errand family: registered as "errand"."""

from __future__ import annotations

import random
from collections.abc import Iterable

from gaca.envs.base import EnvFamily, PriorChoice
from gaca.envs.errand.engine import ErrandEnv
from gaca.envs.errand.knobs import PRESETS
from gaca.envs.errand.world import INDIRECT_WORDS, USES, ErrandTask, generate_task, vocabulary_names
from gaca.envs.families import FAMILIES
from gaca.envs.household import commands
from gaca.envs.household.lexicon import GOAL_TYPES, OBJECT_TYPES
from gaca.envs.text import words

_FIXED_TEXT = (
    "you are at . on the , you see nothing , a , and a . the way on leads to",
    "you arrive at . you pick up the from the . you put the in/on the .",
    "you are carrying : a . you are not carrying anything . you are facing the . nothing happens .",
    "go to take from put in/on examine inventory look",
    "your task is to : put a in on .",
)


@FAMILIES.register("errand")
class ErrandFamily(EnvFamily[ErrandTask, ErrandEnv]):
    """Errands in ALFWorld's words, built to test credit assignment (docs/testbed.md): the first action
    chooses among look-alike objects, a routine walk of ``route_length`` stops follows, and only the
    final put reveals whether the choice was right. Horizon 40 by default."""

    default_horizon = 40
    knob_presets = PRESETS

    @property
    def prior_accuracy(self) -> float:
        return self.knobs.prior_accuracy

    def prior_choices(self, task_ids: Iterable[int]) -> list[PriorChoice]:
        """Per task the choice of the object at the start and, with ``num_goals`` > 1, the choice of the end
        to head for once the target is in hand, with the history a rollout's prompt shows."""
        choices = []
        for task_id in task_ids:
            env = self.make(task_id)
            observation = env.reset()
            take = [commands.take(name, env.task.start) for name in env.task.objects]
            wrong = tuple(a for o, a in enumerate(take) if o != env.target)
            choices.append(PriorChoice(task_id, "object", observation, (), take[env.target], wrong))
            if len(env.task.ends) == 1:
                continue
            holding = env.step(take[env.target]).observation
            heads = [env.head_command(route) for route in range(len(env.task.ends))]
            wrong = tuple(a for r, a in enumerate(heads) if r != env.goal_route)
            history = ((observation.text, take[env.target]),)
            choices.append(PriorChoice(task_id, "end", holding, history, heads[env.goal_route], wrong))
        return choices

    def _generate(self, rng: random.Random) -> ErrandTask:
        return generate_task(rng, self.knobs)

    def _episode(self, task_id: int, task: ErrandTask) -> ErrandEnv:
        return ErrandEnv(task_id, task, self.horizon, self.cfg.invalid_penalty, bool(self.knobs.show_held))

    def vocabulary(self) -> list[str]:
        vocabulary = {w for text in _FIXED_TEXT for w in words(text)}
        vocabulary |= {w for n in vocabulary_names() for w in words(n)} | set(GOAL_TYPES) | set(OBJECT_TYPES)
        if self.knobs.indirect:  # only then: a larger vocabulary would change every other run's model
            vocabulary |= set(INDIRECT_WORDS) | set(USES.values())
        return sorted(vocabulary)
