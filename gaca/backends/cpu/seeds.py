"""The CPU trainer's random streams: every draw of iteration i comes from a generator seeded by
(seed, i, purpose), so that a run resumed after iteration i repeats what an uninterrupted run does,
and the starting policy (iteration 0) is the same whichever run builds it."""

from __future__ import annotations

import numpy as np

PURPOSE_TASKS, PURPOSE_ROLLOUT, PURPOSE_UPDATE, PURPOSE_EVAL = 1, 2, 3, 4


def seed_for(seed: int, iteration: int, purpose: int) -> int:
    return int(np.random.SeedSequence([seed, iteration, purpose]).generate_state(1)[0])
