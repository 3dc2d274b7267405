"""Many episodes stepped together: the batched interface the rollout loop uses."""

from __future__ import annotations

from collections.abc import Sequence

from gaca.envs.base import Env, EnvFamily, Observation, StepResult


class VectorEnv:
    """One episode per task id, stepped in lockstep.

    ``step`` takes one action per episode and returns one result per episode, both in task-id
    order. An episode that has ended stays ended: its action must be None and its result is None;
    ``alive[i]`` says whether episode i still takes actions. ``reset`` restarts every episode.
    """

    def __init__(self, family: EnvFamily, task_ids: Sequence[int]) -> None:
        self.task_ids = list(task_ids)
        self.envs: list[Env] = [family.make(task_id) for task_id in self.task_ids]
        self.alive = [False] * len(self.envs)

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self) -> list[Observation]:
        self.alive = [True] * len(self.envs)
        return [env.reset() for env in self.envs]

    def step(self, actions: Sequence[str | None]) -> list[StepResult | None]:
        """Apply ``actions[i]`` to episode i; None in, None out for episodes that are done."""
        if len(actions) != len(self.envs):
            raise ValueError(f"actions must hold one entry per episode ({len(self.envs)}), got {len(actions)}")
        results: list[StepResult | None] = []
        for index, (env, action) in enumerate(zip(self.envs, actions)):
            if not self.alive[index]:
                if action is not None:
                    raise ValueError(f"actions[{index}] must be None: episode {index} is done (see alive)")
                results.append(None)
                continue
            if action is None:
                raise ValueError(f"actions[{index}] is None but episode {index} is alive")
            result = env.step(action)
            self.alive[index] = not result.done
            results.append(result)
        return results

    def expert_actions(self) -> list[str | None]:
        """The planner's next action for every live episode (None for ended ones)."""
        return [env.expert_action() if alive else None for env, alive in zip(self.envs, self.alive)]
