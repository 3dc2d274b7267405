"""`gaca bench update [--at 1,10,20,40] [overrides]`: how much of the PPO update's work repeats, and
where its seconds go.

Trains one run (the default trainer, seed 0, one thread unless the overrides say otherwise) through
the CPU loop's own ``iteration``, without MLflow or evaluations, and at each iteration of ``--at``
takes the batch the update is about to see: the fraction of its step rows that repeat an earlier
(prompt ids, response ids) pair of the batch, of their mini-batch, or an earlier prompt; the
fraction of the token grid that is padding in the mini-batches' forwards; and, on copies of the
policy and optimizer as they stand, the update computed each way of ``WAYS`` (today's ``every_row``
at every position, ``distinct``, and ``distinct`` with the last layer at the scored positions only),
each split into forward, backward, reference forward and optimizer seconds, and the largest
differences of each way's loss and gradient entries from today's on the first mini-batch (the later
ones are taken at weights that differ in their last bits, and the surrogate's clipping is
discontinuous).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import torch

from gaca.backends.config import RunConfig
from gaca.backends.cpu.loop import iteration
from gaca.backends.cpu.ppo import PHASES, UpdateStats, distinct_pairs, first_of_each, minibatches, ppo_update
from gaca.backends.cpu.rollout import RolloutRows
from gaca.backends.cpu.seeds import PURPOSE_UPDATE, seed_for
from gaca.backends.cpu.start import initial_policy
from gaca.compose import compose, validate
from gaca.envs import make_family
from gaca.policy.model import Policy

WAYS = {
    "every_row": ("every_row", "every_position"),
    "distinct": ("distinct", "every_position"),
    "distinct+scored": ("distinct", "scored_positions"),
}
"""The update's ways compared, by name: (``trainer.update``, ``trainer.last_layer``); the first is today's default."""


def padding_fraction(rows: RolloutRows, batches: Sequence[Sequence[int]]) -> float:
    """Of the [B, prompt width + response width] grids that ``sequence_logprobs`` builds for ``batches``,
    the fraction of cells that are padding."""
    grid = real = 0
    for batch in batches:
        prompts = [len(rows.prompt_ids[i]) for i in batch]
        responses = [len(rows.response_ids[i]) for i in batch]
        grid += len(batch) * (max(prompts) + max(responses))
        real += sum(prompts) + sum(responses)
    return 1.0 - real / grid


def repeats(rows: RolloutRows, batches: Sequence[Sequence[int]]) -> dict[str, float]:
    """Fractions of rows that repeat an earlier pair of the batch, of their mini-batch, or an earlier prompt,
    and the padding fractions of the mini-batches scored row by row and pair by pair."""
    pairs = distinct_pairs(rows)
    prompts = {tuple(ids) for ids in rows.prompt_ids}
    distinct_batches = [[batch[j] for j in first_of_each([pairs[i] for i in batch])[0]] for batch in batches]
    n = len(rows)
    return {
        "repeat batch": 1.0 - len(set(pairs)) / n,
        "repeat minibatch": 1.0 - sum(map(len, distinct_batches)) / sum(map(len, batches)),
        "repeat prompt": 1.0 - len(prompts) / n,
        "pad every_row": padding_fraction(rows, batches),
        "pad distinct": padding_fraction(rows, distinct_batches),
    }


def timed_updates(
    run: RunConfig,
    policy: Policy,
    optimizer_state: dict,
    reference: Policy | None,
    rows: RolloutRows,
    advantages: torch.Tensor,
    i: int,
) -> dict[str, UpdateStats]:
    """Iteration ``i``'s update computed each way of ``WAYS`` on copies of ``policy`` and its optimizer."""
    stats = {}
    for way, (update, last_layer) in WAYS.items():
        twin = copy.deepcopy(policy)
        optimizer = torch.optim.AdamW(twin.model.parameters(), lr=run.trainer.lr, weight_decay=run.trainer.weight_decay)
        optimizer.load_state_dict(optimizer_state)
        for group in optimizer.param_groups:
            group["lr"] = run.trainer.lr_at(i)
        generator = torch.Generator().manual_seed(seed_for(run.seed, i, PURPOSE_UPDATE))
        config = dataclasses.replace(run.trainer, update=update, last_layer=last_layer)
        stats[way] = ppo_update(twin, reference, optimizer, rows, advantages, config, generator)
    return stats


def subset(rows: RolloutRows, indices: Sequence[int]) -> RolloutRows:
    """The rows ``indices`` of ``rows``, in that order."""
    values = {
        name: [getattr(rows, name)[i] for i in indices]
        for name in ("group", "traj", "step", "reward", "anchor", "invalid", "prompt_ids", "response_ids", "logprobs")
    }
    return RolloutRows(**values, allowed=None if rows.allowed is None else [rows.allowed[i] for i in indices])


def gradient_differences(
    run: RunConfig, policy: Policy, reference: Policy | None, rows: RolloutRows, advantages: torch.Tensor
) -> dict[str, tuple[float, float]]:
    """For each way of ``WAYS`` after the first, the largest differences of its loss (surrogate plus KL)
    and of any gradient entry from the first way's, on ``rows`` as one mini-batch at ``policy``'s
    weights (unclipped, no optimizer step)."""
    results = {}
    for way, (update, last_layer) in WAYS.items():
        twin = copy.deepcopy(policy)
        config = dataclasses.replace(
            run.trainer, update=update, last_layer=last_layer, minibatch_size=len(rows), max_grad_norm=1e30
        )
        optimizer = torch.optim.SGD(twin.model.parameters(), lr=0.0)
        stats = ppo_update(twin, reference, optimizer, rows, advantages, config, torch.Generator().manual_seed(0))
        gradient = torch.cat([p.grad.flatten() for p in twin.model.parameters() if p.grad is not None])
        results[way] = (stats.policy_loss + run.trainer.kl_coef * stats.kl, gradient)
    (old_loss, old_gradient), *_ = results.values()
    return {
        way: (abs(loss - old_loss), float((gradient - old_gradient).abs().max()))
        for way, (loss, gradient) in list(results.items())[1:]
    }


def profile(run: RunConfig, at: Sequence[int]) -> list[dict[str, float]]:
    """One row per iteration of ``at`` (see the module docstring)."""
    if run.trainer.threads is not None:
        torch.set_num_threads(run.trainer.threads)
    family = make_family(run.env)
    policy = initial_policy(run, family, Path(run.output_dir) / "bc-cache")
    reference = None
    if run.trainer.kl_coef > 0:
        reference = copy.deepcopy(policy)
        reference.model.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=run.trainer.lr, weight_decay=run.trainer.weight_decay)
    table = []
    for i in range(1, max(at) + 1):
        before = (copy.deepcopy(policy), copy.deepcopy(optimizer.state_dict())) if i in at else None
        step = iteration(run, family, policy, reference, optimizer, i)
        if before is None:
            continue
        rows = step.rollouts.rows
        generator = torch.Generator().manual_seed(seed_for(run.seed, i, PURPOSE_UPDATE))
        batches = minibatches(len(rows), run.trainer, generator)  # the update's own
        stats = timed_updates(run, *before, reference, rows, step.advantage.advantages, i)
        row: dict[str, float] = {"iteration": i, "rows": len(rows), "success": step.rollouts.success_rate}
        row.update(repeats(rows, batches))
        for way, values in stats.items():
            row.update({f"{way} {phase}": values.seconds[phase] for phase in PHASES})
            row[f"{way} total"] = sum(values.seconds.values())
        first = batches[0]
        differences = gradient_differences(
            run, before[0], reference, subset(rows, first), step.advantage.advantages[first]
        )
        for way, (loss, gradient) in differences.items():
            row[f"{way} |d loss|"], row[f"{way} |d grad|"] = loss, gradient
        table.append(row)
        print(f"iteration {i}: {row}", flush=True)
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca bench update", description=__doc__)
    parser.add_argument("--at", default="1,10,20,40", help="comma-separated iterations to profile")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides (default: seed=0 trainer.threads=1)")
    args = parser.parse_args(argv)
    run, _ = validate(compose(["seed=0", "trainer.threads=1", *args.overrides]))
    at = sorted({int(i) for i in args.at.split(",")})
    table = profile(run, at)
    print("fractions of step rows (repeat) and of forward token grids (pad)")
    print(
        f"{'iter':>4} {'rows':>5} {'succ':>5} {'rep batch':>9} {'rep mb':>7} {'rep prompt':>10} {'pad':>5} "
        f"{'pad dist':>8}"
    )
    for row in table:
        print(
            f"{row['iteration']:>4} {row['rows']:>5} {row['success']:>5.2f} {row['repeat batch']:>9.3f} "
            f"{row['repeat minibatch']:>7.3f} {row['repeat prompt']:>10.3f} {row['pad every_row']:>5.3f} "
            f"{row['pad distinct']:>8.3f}"
        )
    today = next(iter(WAYS))
    print(f"seconds of each way's update by phase; ratio: its total / {today}'s; |d|: first mini-batch against {today}")
    print(
        f"{'iter':>4} {'way':>16} {'fwd':>6} {'bwd':>6} {'ref':>6} {'opt':>5} {'total':>6} {'ratio':>5} "
        f"{'|d loss|':>8} {'|d grad|':>8}"
    )
    for row in table:
        for way in WAYS:
            seconds = " ".join(f"{row[f'{way} {p}']:>{5 if p == 'optimizer' else 6}.2f}" for p in PHASES)
            ratio = row[f"{way} total"] / row[f"{today} total"]
            loss, gradient = (
                f"{row[f'{way} |d {d}|']:>8.1e}" if way != today else f"{'':>8}" for d in ("loss", "grad")
            )
            print(
                f"{row['iteration']:>4} {way:>16} {seconds} {row[f'{way} total']:>6.2f} {ratio:>5.2f} {loss} {gradient}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
