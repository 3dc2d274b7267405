"""Environment throughput on one core: steps/s under a random and under the planner policy, resets/s.

Run ``python -m gaca.bench.envs`` (target: >= 20,000 steps/s per family and policy). Everything
runs in this one thread, so the numbers are per core. The embedded families run by default; alfworld
(ALFWorld's real engine, tens of steps/s) on request: ``--families alfworld --steps 300 --tasks 8``.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from gaca.envs import FAMILIES, Env, EnvConfig, Observation, make_family

Policy = Callable[[Env, Observation], str]
EMBEDDED_FAMILIES = ("household", "shop")
"""The families measured by default; alfworld needs its extra and runs about a thousand times slower."""


def random_policy(seed: int) -> Policy:
    rng = random.Random(seed)
    return lambda env, observation: rng.choice(observation.admissible)


def planner_policy(env: Env, observation: Observation) -> str:
    return env.expert_action()


def steps_per_second(envs: Sequence[Env], policy: Policy, min_steps: int) -> float:
    """Play whole episodes round-robin over ``envs`` until ``min_steps`` steps; resets are timed too."""
    steps = 0
    start = time.perf_counter()
    while steps < min_steps:
        for env in envs:
            observation = env.reset()
            done = False
            while not done:
                result = env.step(policy(env, observation))
                observation, done = result.observation, result.done
                steps += 1
    return steps / (time.perf_counter() - start)


def resets_per_second(cfg: EnvConfig, num_tasks: int) -> float:
    """Generate and reset ``num_tasks`` fresh tasks (family construction not timed)."""
    family = make_family(cfg)
    start = time.perf_counter()
    for task_id in family.train_task_ids[:num_tasks]:
        family.make(task_id).reset()
    return num_tasks / (time.perf_counter() - start)


def benchmark(name: str, difficulty: str, min_steps: int, num_tasks: int, seed: int) -> dict[str, float | str]:
    cfg = EnvConfig(name=name, difficulty=difficulty, num_train_tasks=num_tasks, seed=seed)
    family = make_family(cfg)
    envs = [family.make(task_id) for task_id in family.train_task_ids]
    return {
        "family": name,
        "difficulty": difficulty,
        "random_steps_per_s": steps_per_second(envs, random_policy(seed), min_steps),
        "planner_steps_per_s": steps_per_second(envs, planner_policy, min_steps),
        "resets_per_s": resets_per_second(cfg, num_tasks),
    }


def main(argv: Sequence[str] | None = None) -> list[dict[str, float | str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(EMBEDDED_FAMILIES), choices=FAMILIES.names())
    parser.add_argument("--difficulties", nargs="+", default=["easy", "paper"])
    parser.add_argument("--steps", type=int, default=100_000, help="steps per measurement")
    parser.add_argument("--tasks", type=int, default=256, help="task ids cycled through (and generated for resets/s)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = [benchmark(f, d, args.steps, args.tasks, args.seed) for f in args.families for d in args.difficulties]
    print(f"{'family':<10} {'difficulty':<10} {'random steps/s':>15} {'planner steps/s':>16} {'resets/s':>10}")
    for row in rows:
        print(
            f"{row['family']:<10} {row['difficulty']:<10} {row['random_steps_per_s']:>15,.0f} "
            f"{row['planner_steps_per_s']:>16,.0f} {row['resets_per_s']:>10,.0f}"
        )
    return rows


if __name__ == "__main__":
    main()
