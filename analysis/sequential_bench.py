"""``python -m analysis.sequential_bench [--replicates R] [--max-seeds N]``: the sequential design
(``analysis.sequential``) on simulated experiments like the measured ones, against a fixed-n design
of the same maximum: false decisions under no true difference, power and the average seeds used
under true 3- and 5-point differences; then the "does not help" comparisons (``NO_GAIN``, a
one-sided test against the margin): false "holds" when the true gain is the margin itself, and how
often they hold when there is no gain.

The simulated experiments are those of ``analysis.sequential_sim``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from analysis import sequential
from analysis.sequential import CONTRADICTED, EQUIVALENT, GREATER, HOLDS, NO_GAIN, Schedule
from analysis.sequential_sim import REGIMES, TASKS, Regime, simulate


@dataclass(frozen=True)
class Row:
    regime: str
    kind: str
    difference: float
    decided_holds: float
    decided_contradicted: float
    equivalent: float
    mean_seeds: float
    fixed_holds: float
    fixed_contradicted: float


def evaluate(
    regime: Regime, difference: float, schedule: Schedule, replicates: int, seed: int = 0, kind: str = GREATER
) -> Row:
    """One row of the table; the draws differ from the calibration's (another seed)."""
    rng = np.random.default_rng([seed, 7])
    differences, variances = simulate(rng, regime, difference, replicates, schedule.max_seeds)
    run = sequential.run_sequential(differences, variances, TASKS, schedule, kind)
    fixed = sequential.run_fixed(differences, variances, TASKS, schedule.alpha, schedule.margin, kind)
    return Row(
        regime.name,
        kind,
        difference,
        float(np.mean(run.decision == HOLDS)),
        float(np.mean(run.decision == CONTRADICTED)),
        float(np.mean(run.decision == EQUIVALENT)),
        float(run.seeds.mean()),
        float(np.mean(fixed == HOLDS)),
        float(np.mean(fixed == CONTRADICTED)),
    )


def table(schedule: Schedule, replicates: int, differences: tuple[float, ...] = (0.0, 0.03, 0.05)) -> list[Row]:
    return [evaluate(regime, d, schedule, replicates, seed) for seed, regime in enumerate(REGIMES) for d in differences]


def no_gain_table(schedule: Schedule, replicates: int) -> list[Row]:
    """``NO_GAIN`` rows: at a true gain of the margin (its "holds" is the false decision) and of 0."""
    return [
        evaluate(regime, d, schedule, replicates, seed, NO_GAIN)
        for seed, regime in enumerate(REGIMES)
        for d in (schedule.margin, 0.0)
    ]


def markdown(rows: list[Row]) -> str:
    lines = [
        "| Regime | Comparison | True diff (pts) | Seq. holds | Seq. contradicted | Seq. equivalent | Mean seeds "
        "| Fixed-n holds | Fixed-n contradicted |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r.regime} | {r.kind} | {100 * r.difference:g} | {100 * r.decided_holds:.2f}% | "
        f"{100 * r.decided_contradicted:.2f}% | "
        f"{100 * r.equivalent:.2f}% | {r.mean_seeds:.1f} | {100 * r.fixed_holds:.2f}% | "
        f"{100 * r.fixed_contradicted:.2f}% |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.sequential_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20000)
    parser.add_argument("--max-seeds", type=int, default=sequential.MAX_SEEDS)
    parser.add_argument("--spending", default=sequential.DEFAULT_SPENDING, choices=sorted(sequential.SPENDING))
    parser.add_argument("--min-deciding", type=int, default=sequential.MIN_DECIDING_SEEDS)
    parser.add_argument("--uncalibrated", action="store_true", help="spend the nominal alpha (no calibration)")
    args = parser.parse_args(argv)
    schedule = Schedule.rounds(args.max_seeds, spending=args.spending, min_deciding=args.min_deciding)
    if not args.uncalibrated:
        schedule = schedule.calibrated()
    began = time.monotonic()
    rows = table(schedule, args.replicates) + no_gain_table(schedule, args.replicates)
    print(
        f"design {schedule.tag()}; boundaries {np.round(schedule.boundaries(), 3).tolist()}; "
        f"{args.replicates} replicates per row, {TASKS} tasks per seed"
    )
    print(markdown(rows))
    print(f"({time.monotonic() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
