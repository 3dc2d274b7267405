"""The errand family: registered as "errand"."""

from __future__ import annotations

import random

from gaca.envs.base import EnvFamily, Observation
from gaca.envs.errand.engine import ErrandEnv
from gaca.envs.errand.knobs import PRESETS
from gaca.envs.errand.world import ErrandTask, generate_task, vocabulary_names
from gaca.envs.household.lexicon import GOAL_TYPES, OBJECT_TYPES
from gaca.envs.families import FAMILIES
from gaca.envs.household import commands
from gaca.envs.text import words

PRIOR_REPEATS = 4
"""First-action demonstrations per training task in the base policy's prior stage."""

_FIXED_TEXT = (
    "you are at . on the , you see nothing , a , and a . the way on leads to",
    "you arrive at . you pick up the from the . you put the in/on the .",
    "you are carrying : a . you are not carrying anything . you are facing the . nothing happens .",
    "go to take from put in/on examine inventory look",
    "your task is to : put a in on .",
)


@FAMILIES.register("errand")
class ErrandFamily(EnvFamily):
    """Errands in ALFWorld's words, built to test credit assignment (docs/testbed.md): the first action
    chooses among look-alike objects, a routine walk of ``route_length`` stops follows, and only the
    final put reveals whether the choice was right. Horizon 40 by default."""

    default_horizon = 40
    knob_presets = PRESETS

    def prior_demonstrations(self) -> list[tuple[Observation, str]]:
        """``PRIOR_REPEATS`` first actions per training task: the target taken with probability
        ``prior_accuracy``, else one of the look-alikes. Labels are drawn afresh for every repeat, so the
        clone learns to read the task and to be right about that often, not which task had which label."""
        accuracy = self.knobs.prior_accuracy
        if accuracy == 0:
            return []
        demos = []
        for task_id in self.train_task_ids:
            env = self.make(task_id)
            observation = env.reset()
            decoys = [o for o in range(len(env.task.objects)) if o != env.target]
            for repeat in range(PRIOR_REPEATS):
                rng = random.Random(f"errand-prior/{self.cfg.seed}/{task_id}/{repeat}")
                chosen = env.target if rng.random() < accuracy else rng.choice(decoys)
                demos.append((observation, commands.take(env.task.objects[chosen], env.task.start)))
        return demos

    def _generate(self, rng: random.Random) -> ErrandTask:
        return generate_task(rng, self.knobs)

    def _episode(self, task_id: int, task: ErrandTask) -> ErrandEnv:
        return ErrandEnv(task_id, task, self.horizon, self.cfg.invalid_penalty, bool(self.knobs.show_held))

    def vocabulary(self) -> list[str]:
        vocabulary = {w for text in _FIXED_TEXT for w in words(text)}
        vocabulary |= {w for n in vocabulary_names() for w in words(n)} | set(GOAL_TYPES) | set(OBJECT_TYPES)
        return sorted(vocabulary)
