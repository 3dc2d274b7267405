"""`gaca bench estimators`: time every estimator on a paper-scale batch against the loop reference,
and measure how much each of verl-agent's conventions changes the advantages.

The timed batch mirrors the paper's: 128 prompt groups x 8 rollouts x 50 steps = 51,200 step rows,
anchors are ~300-character observation strings, ~86% of rows share their anchor with another
row. Every timed call hashes fresh copies of the anchor strings (CPython caches a string's hash,
so reusing the objects would hide that cost). One torch thread, as on a trainer's CPU.

Side by side in the same run: gaca/entropy on tensors with anchor ids coded beforehand, on the same
tensors with the anchors as a NumPy object array of fresh strings (what verl-agent hands over), and
CPython's hash of those strings alone, the least that exact coding through a dict costs.

The conventions table uses a typical training batch instead: 16 tasks x 8 rollouts, episodes that
end at success or at 50 steps, invalid actions at 10% of steps, reward 1 on success.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import time
from typing import Any

import numpy as np
import torch

from gaca import AdvantageConfig, compute_advantages
from gaca.estimators.batch import build_step_batch
from gaca.estimators.config import CONVENTIONS
from gaca.estimators.reference import reference_advantages
from gaca.estimators.registry import DETECTORS, ESTIMATORS

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


def typical_batch(
    tasks: int = 16,
    rollouts: int = 8,
    horizon: int = 50,
    invalid_rate: float = 0.1,
    penalty: float = 0.1,
    seed: int = 0,
) -> dict[str, Any]:
    """Columns of a training batch with mixed lengths and invalid actions (see the module docstring)."""
    rng = random.Random(seed)
    columns: dict[str, list] = {key: [] for key in ("group", "traj", "step", "reward", "anchor", "nll", "invalid")}
    for g in range(tasks):
        states = [[f"task {g} state {t}.{k}" for k in range(2)] for t in range(horizon)]
        for k in range(rollouts):
            length = rng.randint(5, horizon) if rng.random() < 0.5 else horizon  # success ends the episode
            for t in range(length):
                invalid = rng.random() < invalid_rate
                won = length < horizon and t == length - 1
                columns["group"].append(g)
                columns["traj"].append(g * rollouts + k)
                columns["step"].append(t)
                columns["reward"].append((1.0 if won else 0.0) - (penalty if invalid else 0.0))
                columns["anchor"].append(f"task {g} unique {k}.{t}" if rng.random() < 0.12 else rng.choice(states[t]))
                columns["nll"].append(rng.expovariate(1.0))
                columns["invalid"].append(invalid)
    return columns


CONVENTION_STEPS: tuple[tuple[str, str], ...] = (
    ("singleton_zero", "singleton anchor -> 0"),
    ("one_element_raw", "one-element set -> raw score"),
    ("episode_over_rows", "episode statistics over step rows"),
    ("penalty_at_step", "penalty at its own step"),
)
"""verl-agent's conventions, switched on one after another from ``spec`` (the last step is ``verl_agent``)."""


def convention_effects(batch: dict[str, Any], penalty: float = 0.1) -> list[tuple[str, str, float, float]]:
    """(method, convention, mean |change|, max |change|) of the advantages as each convention is added."""
    step_batch = build_step_batch(
        batch["group"],
        batch["traj"],
        batch["step"],
        batch["reward"],
        batch["anchor"],
        batch["nll"],
        invalid=batch["invalid"],
        invalid_penalty=penalty,
    )
    effects = []
    for method in ESTIMATORS.in_order():
        config = AdvantageConfig(method=method)
        rules = CONVENTIONS["spec"]
        previous = ESTIMATORS.get(method)(step_batch, config, rules).advantages
        start = previous
        for switch, label in CONVENTION_STEPS:
            rules = dataclasses.replace(rules, **{switch: True})
            current = ESTIMATORS.get(method)(step_batch, config, rules).advantages
            change = (current - previous).abs()
            effects.append((method, label, float(change.mean()), float(change.max())))
            previous = current
        assert rules == dataclasses.replace(CONVENTIONS["verl_agent"], copies_count=False)  # the batch has no copies
        total = (previous - start).abs()
        effects.append((method, "all (spec -> verl_agent)", float(total.mean()), float(total.max())))
    return effects


def every_estimator() -> dict[str, AdvantageConfig]:
    """Each registered estimator by name; a gated one once per detector (``gaca/entropy``, ...)."""
    variants: dict[str, AdvantageConfig] = {}
    for method in ESTIMATORS.in_order():
        if ESTIMATORS.spec(method).gated:
            variants |= {f"{method}/{d}": AdvantageConfig(method=method, detector=d) for d in DETECTORS.in_order()}
        else:
            variants[method] = AdvantageConfig(method=method)
    return variants


def fresh_strings(strings: list[str]) -> list[str]:
    """Equal strings as new objects, so their hashes are computed again."""
    return [(s + ".")[:-1] for s in strings]


def time_round_robin(
    batch: dict[str, Any], variants: dict[str, AdvantageConfig | None], repeats: int
) -> dict[str, float]:
    """Median seconds per variant (None: ``HASHING``); variants alternate within each round so machine
    noise hits all alike."""
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
            if config is None:
                strings = tuple(fresh_strings(batch["anchor"]))
                start = time.perf_counter()
                hash(strings)
            elif name.endswith(TENSOR_SUFFIX):
                compute_advantages(config=config, **tensors)
            elif name.endswith(STRING_ANCHOR_SUFFIX):
                object_anchors = np.array(fresh_strings(batch["anchor"]), dtype=object)
                start = time.perf_counter()
                compute_advantages(config=config, **(tensors | {"anchor": object_anchors}))
            else:
                anchors = fresh_strings(batch["anchor"])
                start = time.perf_counter()
                compute_advantages(config=config, **(batch | {"anchor": anchors}))
            seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


TENSOR_SUFFIX = " (tensors)"
STRING_ANCHOR_SUFFIX = " (tensors, str anchors)"
"""The same tensors, anchors as a NumPy object array of fresh strings: what the pre-coded-id path
pays extra for coding them."""


HASHING = "hashing the str anchors alone"
"""CPython's hash of the same fresh strings, once each (``hash`` of a tuple hashes every element in
one C loop): the least that exact coding of them through a dict costs."""


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
        **every_estimator(),
        f"gigpo{TENSOR_SUFFIX}": AdvantageConfig(method="gigpo"),
        f"gaca/entropy{TENSOR_SUFFIX}": AdvantageConfig(),
        f"gaca/entropy{STRING_ANCHOR_SUFFIX}": AdvantageConfig(),
        HASHING: None,
    }
    compute_advantages(config=variants["gaca/loo"], **batch)  # warm-up: first-call allocations
    medians = time_round_robin(batch, variants, args.repeats)
    nonsingleton = compute_advantages(config=AdvantageConfig(), **batch).diagnostics["nonsingleton_frac"]
    loop = None
    if not args.skip_loop:
        start = time.perf_counter()
        reference_advantages(config=AdvantageConfig(), **batch)
        loop = time.perf_counter() - start

    print(
        f"batch: {rows} step rows ({args.groups} groups x {args.rollouts} rollouts x {args.steps} steps), "
        f"{nonsingleton:.0%} in non-singleton anchor groups, torch threads {args.threads}, "
        f"median of {args.repeats} calls, anchors hashed every call"
    )
    print(f"{'estimator':<36} {'ms':>8} {'/ gigpo':>8} {'loop / this':>12}")
    for name, seconds in medians.items():
        if name == HASHING:
            continue
        speedup = f"{loop / seconds:>11.0f}x" if loop else f"{'-':>12}"
        baseline = medians[f"gigpo{TENSOR_SUFFIX}"] if "(tensors" in name else medians["gigpo"]
        print(f"{name:<36} {seconds * 1e3:>8.1f} {seconds / baseline:>8.2f} {speedup}")
    if loop:
        print(f"{'loop reference':<36} {loop * 1e3:>8.0f} {loop / medians['gigpo']:>8.1f} {'1x':>12}")
    coded, strings = medians[f"gaca/entropy{TENSOR_SUFFIX}"], medians[f"gaca/entropy{STRING_ANCHOR_SUFFIX}"]
    print(f"\ngaca/entropy on {rows} rows, anchors as pre-coded ids or as fresh strings (same run)")
    print(f"{'anchors':<52} {'ms':>8} {'/ ids':>8}")
    for label, seconds in (
        ("pre-coded ids (tensor)", coded),
        ("strings (NumPy object array)", strings),
        ("  of which coding the strings", strings - coded),
        ("hashing the strings alone (CPython's str hash)", medians[HASHING]),
    ):
        print(f"{label:<52} {seconds * 1e3:>8.1f} {seconds / coded:>8.2f}")

    typical = typical_batch()
    print(
        f"\nconventions: typical batch of {len(typical['reward'])} step rows (16 tasks x 8 rollouts, "
        "mixed lengths up to 50, 10% invalid actions, penalty 0.1, success reward 1); |change| of A_t"
    )
    print(f"{'method':<7} {'convention added':<36} {'mean':>8} {'max':>8}")
    for method, label, mean, largest in convention_effects(typical):
        print(f"{method:<7} {label:<36} {mean:>8.4f} {largest:>8.4f}")


if __name__ == "__main__":
    main()
