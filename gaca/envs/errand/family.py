"""The errand family: registered as "errand"."""

from __future__ import annotations

import random

from gaca.envs.base import EnvFamily
from gaca.envs.errand.engine import ErrandEnv
from gaca.envs.errand.knobs import PRESETS
from gaca.envs.errand.world import ErrandTask, generate_task, vocabulary_names
from gaca.envs.household.lexicon import GOAL_TYPES, OBJECT_TYPES
from gaca.envs.families import FAMILIES
from gaca.envs.text import words

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

    def _generate(self, rng: random.Random) -> ErrandTask:
        return generate_task(rng, self.knobs)

    def _episode(self, task_id: int, task: ErrandTask) -> ErrandEnv:
        return ErrandEnv(task_id, task, self.horizon, self.cfg.invalid_penalty, bool(self.knobs.show_held))

    def vocabulary(self) -> list[str]:
        vocabulary = {w for text in _FIXED_TEXT for w in words(text)}
        vocabulary |= {w for n in vocabulary_names() for w in words(n)} | set(GOAL_TYPES) | set(OBJECT_TYPES)
        return sorted(vocabulary)
