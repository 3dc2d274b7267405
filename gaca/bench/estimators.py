"""`gaca bench estimators`: time every estimator on a paper-scale batch against the loop reference.

The batch mirrors the paper's: 128 prompt groups x 8 rollouts x 50 steps = 51,200 step rows,
anchors are ~300-character observation strings, ~86% of rows share their anchor with another
row. Every timed call hashes fresh copies of the anchor strings (CPython caches a string's hash,
so reusing the objects would hide that cost). One torch thread, as on a trainer's CPU.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import torch

from gaca import AdvantageConfig, compute_advantages
from gaca.estimators.reference import reference_advantages

WORDS = "you arrive at countertop cabinet drawer fridge microwave mug apple knife on the see a an and".split()


def paper_scale_batch(groups: int = 128, rollouts: int = 8, steps: int = 50, seed: int = 0) -> dict[str, Any]:
    """Columns of a synthetic batch; see the module docstring for its shape."""
    rng = random.Random(seed)

    def observation() -> str:
        text = ""
        while len(text) < 300:
            text += rng.choice(WORDS) + " "
        return text.strip()

    columns: dict[str, list] = {key: [] for key in ("group", "traj", "step", "reward", "anchor", "nll")}
    for g in range(groups):
        # Two states per time step recur across the group's rollouts; 10% of steps are unique.
        states = [[observation() for _ in range(2)] for _ in range(steps)]
        for k in range(rollouts):
            success = rng.random() < 0.4
            for t in range(steps):
                unique = rng.random() < 0.12
                columns["group"].append(g)
                columns["traj"].append(g * rollouts + k)
                columns["step"].append(t)
                penalty = -0.1 if rng.random() < 0.05 else 0.0
                columns["reward"].append(penalty + (1.0 if success and t == steps - 1 else 0.0))
                columns["anchor"].append(observation() if unique else rng.choice(states[t]))
                columns["nll"].append(rng.expovariate(1.0))
    return columns


def fresh_strings(strings: list[str]) -> list[str]:
    """Equal strings as new objects, so their hashes are computed again."""
    return [(s + ".")[:-1] for s in strings]


def time_round_robin(batch: dict[str, Any], variants: dict[str, AdvantageConfig], repeats: int) -> dict[str, float]:
    """Median seconds per variant; variants alternate within each round so machine noise hits all alike."""
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    # The same batch as tensors with pre-coded anchor ids (what a trainer that codes anchors as it
    # collects them passes): the estimator's own cost, without Python-object conversion.
    index: dict[str, int] = {}
    tensors = {
        "group": torch.tensor(batch["group"]),
        "traj": torch.tensor(batch["traj"]),
        "step": torch.tensor(batch["step"]),
        "reward": torch.tensor(batch["reward"], dtype=torch.float64),
        "nll": torch.tensor(batch["nll"], dtype=torch.float64),
        "anchor": torch.tensor([index.setdefault(a, len(index)) for a in batch["anchor"]]),
    }
    for _ in range(repeats):
        for name, config in variants.items():
            start = time.perf_counter()
            if name.endswith(TENSOR_SUFFIX):
                compute_advantages(config=config, **tensors)
            else:
                anchors = fresh_strings(batch["anchor"])
                start = time.perf_counter()
                compute_advantages(config=config, **(batch | {"anchor": anchors}))
            seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


TENSOR_SUFFIX = " (tensors)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="gaca bench estimators", description=__doc__)
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per estimator (median reported)")
    parser.add_argument("--groups", type=int, default=128)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--skip-loop", action="store_true", help="skip the slow per-row loop baseline")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    batch = paper_scale_batch(args.groups, args.rollouts, args.steps)
    rows = len(batch["reward"])
    variants = {
        "grpo": AdvantageConfig(method="grpo"),
        "gigpo": AdvantageConfig(method="gigpo"),
        **{f"gaca/{d}": AdvantageConfig(detector=d) for d in ("entropy", "uniform", "random", "loo")},
        f"gigpo{TENSOR_SUFFIX}": AdvantageConfig(method="gigpo"),
        f"gaca/entropy{TENSOR_SUFFIX}": AdvantageConfig(),
    }
    compute_advantages(config=variants["gaca/loo"], **batch)  # warm-up: first-call allocations
    medians = time_round_robin(batch, variants, args.repeats)
    nonsingleton = compute_advantages(config=AdvantageConfig(), **batch).diagnostics["nonsingleton_frac"]
    loop = None
    if not args.skip_loop:
        start = time.perf_counter()
        reference_advantages(config=AdvantageConfig(), **batch)
        loop = time.perf_counter() - start

    print(f"batch: {rows} step rows ({args.groups} groups x {args.rollouts} rollouts x {args.steps} steps), "
          f"{nonsingleton:.0%} in non-singleton anchor groups, torch threads {args.threads}, "
          f"median of {args.repeats} calls, anchors hashed every call")
    print(f"{'estimator':<26} {'ms':>8} {'/ gigpo':>8} {'loop / this':>12}")
    for name, seconds in medians.items():
        speedup = f"{loop / seconds:>11.0f}x" if loop else f"{'-':>12}"
        baseline = medians[f"gigpo{TENSOR_SUFFIX}"] if name.endswith(TENSOR_SUFFIX) else medians["gigpo"]
        print(f"{name:<26} {seconds * 1e3:>8.1f} {seconds / baseline:>8.2f} {speedup}")
    if loop:
        print(f"{'loop reference':<26} {loop * 1e3:>8.0f} {loop / medians['gigpo']:>8.1f} {'1x':>12}")


if __name__ == "__main__":
    main()
