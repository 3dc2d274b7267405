"""``python -m analysis.benches.sequential [--replicates R] [--max-seeds N]``: every table of
docs/sequential.md. The candidate tests (``analysis.benches.candidates``) side by side: their
worst false-decision rate over the grid of worlds (``analysis.benches.worlds.worlds``) and their
power; then the default design's false decisions world by world, sequential and at a fixed seed
count; then familywise false decisions within a claim of several comparisons.

A decision is false when the world's true mean difference d contradicts it: "a > b" holds or is
contradicted at d = 0, is contradicted at d > 0, or is equivalent at d >= margin; "does not help"
holds at d >= margin, or is contradicted at d <= margin.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np

from analysis.benches.candidates import CANDIDATES
from analysis.benches.worlds import (
    GAIN,
    LEARN_OR_COLLAPSE,
    MARGIN,
    TASKS,
    Mixture,
    Resampled,
    Stable,
    World,
    simulate,
    testbed_finals,
    worlds,
)
from analysis.stats import basic, sequential
from analysis.stats.sequential import CONTRADICTED, EQUIVALENT, GREATER, HOLDS, NO_GAIN, Schedule

BENCH_SEED = 30
DEFAULT = "betting, c = 1, every seed count"
"""The candidate the design uses (``analysis.stats.sequential``: stakes for every seed count, c = 1)."""


def wrong_verdicts(kind: str, difference: float, margin: float) -> list[str]:
    """The verdicts of a ``kind`` comparison that the true ``difference`` makes false (see the module
    docstring); the tolerance absorbs the rounding of a world's difference."""
    at_margin = difference >= margin - 1e-9
    if kind == GREATER:
        return [HOLDS, CONTRADICTED] * (difference == 0) + [CONTRADICTED] * (difference > 0) + [EQUIVALENT] * at_margin
    return [HOLDS] * at_margin + [CONTRADICTED] * (difference <= margin + 1e-9)


def false_rates(decision: np.ndarray, kind: str, difference: float, margin: float) -> dict[str, float]:
    """Per verdict that ``difference`` makes false, the share of ``decision`` that reached it."""
    return {
        verdict: float(np.mean(decision == verdict))
        for verdict in dict.fromkeys(wrong_verdicts(kind, difference, margin))
    }


def false_decisions(decision: np.ndarray, kind: str, difference: float, margin: float) -> float:
    """The share of ``decision`` that the true ``difference`` contradicts."""
    return sum(false_rates(decision, kind, difference, margin).values())


def draws(world: World, replicates: int, seeds: int, number: int) -> tuple[np.ndarray, np.ndarray]:
    return simulate(np.random.default_rng([BENCH_SEED, number]), world, replicates, seeds)


GRID_DIFFERENCES = (0.0, MARGIN, GAIN)


def grid() -> list[tuple[int, World]]:
    """Every world of the grid, numbered (its number seeds its draws)."""
    return list(enumerate(world for difference in GRID_DIFFERENCES for world in worlds(difference)))


PER_WORLD_COLUMNS = (
    (GREATER, (HOLDS, CONTRADICTED)),
    (GREATER, (EQUIVALENT,)),
    (NO_GAIN, (HOLDS,)),
    (NO_GAIN, (CONTRADICTED,)),
)
"""The false-decision columns of the per-world table: "a > b" holds or contradicted (at d = 0 both
are false, above it only contradicted), "a > b" equivalent, "does not help" holds, contradicted."""


COLUMN_NAMES = (
    "'a > b' holds or contradicted",
    "'a > b' equivalent",
    "'does not help' holds",
    "'does not help' contradicted",
)


def column_rate(
    decision: np.ndarray, kind: str, verdicts: Sequence[str], difference: float, margin: float
) -> float | None:
    """The share of ``decision`` reaching one of ``verdicts`` when the difference makes them false;
    None when it makes none of them false."""
    rates = false_rates(decision, kind, difference, margin)
    if not any(verdict in rates for verdict in verdicts):
        return None
    return sum(rates.get(verdict, 0.0) for verdict in verdicts)


def validity(schedule: Schedule, replicates: int, candidates: Sequence[str] = tuple(CANDIDATES)) -> list[list[str]]:
    """Per candidate, its worst false-decision rate over the grid per column of ``PER_WORLD_COLUMNS``,
    and the world of the worst of them."""
    numbered = grid()
    data = [draws(world, replicates, schedule.max_seeds, number) for number, world in numbered]
    rows = []
    for name in candidates:
        worst = [0.0] * len(PER_WORLD_COLUMNS)
        where = ""
        for (_, world), (differences, variances) in zip(numbered, data):
            decisions = {kind: CANDIDATES[name](differences, variances, schedule, kind) for kind in (GREATER, NO_GAIN)}
            for column, (kind, verdicts) in enumerate(PER_WORLD_COLUMNS):
                rate = column_rate(decisions[kind], kind, verdicts, world.difference, schedule.margin)
                if rate is not None and rate > worst[column]:
                    worst[column] = rate
                    if rate >= max(worst):
                        where = f"{world.name} (d = {100 * world.difference:.3g})"
        rows.append([name, *(f"{100 * rate:.2f}%" for rate in worst), where])
    return rows


POWER_WORLDS: tuple[World, ...] = (
    Stable(shift=GAIN),
    Stable(shift=0.2),
    Stable(shift=0.3),
    Mixture(0.5, 0.5, 0.1, 0.8, shared=0.5, shift=GAIN),
    Mixture(0.5, 0.5 + GAIN / 0.7, 0.1, 0.8, shared=0.5),
    Mixture(0.3, 0.3 + 0.4 / 0.9, 0.0, 0.9, shared=0.5),
    Resampled.with_gain("lambda0=0", "lambda0=0.5", 0.4),
)
"""Gains whose power the table gives: 5 points in the stable and the learn-or-collapse regime
(``worlds.STABLE``, ``LEARN_OR_COLLAPSE``; as a shift and as a higher chance to learn), and
the large gains a budget of seeds can decide."""


def power(schedule: Schedule, replicates: int, candidates: Sequence[str] = tuple(CANDIDATES)) -> list[list[str]]:
    """Per power world, per candidate: P("a > b" holds) and, for the default, the mean seeds used."""
    rows = []
    for number, world in enumerate(POWER_WORLDS, start=1000):
        differences, variances = draws(world, replicates, schedule.max_seeds, number)
        cells = [world.name, f"{100 * world.difference:.3g}"]
        for name in candidates:
            decision = CANDIDATES[name](differences, variances, schedule, GREATER)
            cells.append(f"{100 * np.mean(decision == HOLDS):.1f}%")
        run = sequential.run_sequential(differences, schedule)
        cells.append(f"{run.seeds.mean():.1f}")
        rows.append(cells)
    return rows


def per_world(schedule: Schedule, replicates: int) -> list[list[str]]:
    """The default design's false decisions per world and verdict: sequential (fixed-n at the
    budget); "-" where the world's difference makes the verdict true."""
    rows = []
    for number, world in grid():
        differences, _ = draws(world, replicates, schedule.max_seeds, number)
        decisions = {
            kind: (
                sequential.run_sequential(differences, schedule, kind).decision,
                sequential.run_fixed(differences, schedule.alpha, schedule.margin, kind),
            )
            for kind in (GREATER, NO_GAIN)
        }
        cells = [world.name, f"{100 * world.difference:.3g}"]
        for kind, verdicts in PER_WORLD_COLUMNS:
            seq, fixed = (column_rate(d, kind, verdicts, world.difference, schedule.margin) for d in decisions[kind])
            cells.append("-" if seq is None or fixed is None else f"{100 * seq:.2f}% ({100 * fixed:.2f}%)")
        rows.append(cells)
    return rows


def cell_rates(rng: np.random.Generator, world: Mixture, cells: int, replicates: int, seeds: int) -> np.ndarray:
    """``cells`` arms of one learn-or-collapse world, sharing each seed's uniform number with
    probability ``world.shared``, with task noise: ``(cells, replicates, seeds)``."""
    shape = (replicates, seeds)
    common = rng.random(shape)
    rates = []
    for _ in range(cells):
        draw = np.where(rng.random(shape) < world.shared, common, rng.random(shape))
        rate = np.where(draw < world.learn_b, world.learned, world.collapsed)
        rates.append(rng.binomial(TASKS, rate) / TASKS)
    return np.asarray(rates)


def familywise(schedule: Schedule, replicates: int, parts: int = 5) -> list[list[str]]:
    """ "a beats each of ``parts`` others" (the lambda0 block's "no fixed lambda0 matches") with all
    cells equal: the chance of any false decision among the parts, each part at alpha / parts
    (Bonferroni, the design) and at alpha (no control)."""
    rows = []
    for number, world in enumerate((LEARN_OR_COLLAPSE, Mixture(0.03, 0.03), Mixture(0.5, 0.5, shared=0.5))):
        rates = cell_rates(np.random.default_rng([BENCH_SEED, 2000 + number]), world, parts + 1, replicates, 15)
        differences = rates[0][None] - rates[1:]
        cells = [world.name]
        for split in (parts, 1):
            wrong = np.zeros(replicates, bool)
            for part in differences:
                run = sequential.run_sequential(part[:, : schedule.max_seeds], schedule, GREATER, split)
                wrong |= (run.decision == HOLDS) | (run.decision == CONTRADICTED)
            cells.append(f"{100 * wrong.mean():.2f}%")
        rows.append(cells)
    return rows


TESTBED_COMPARISONS = (
    ("entropy − uniform", "entropy", "lambda0=0.5"),
    ("uniform − random", "lambda0=0.5", "random"),
    ("lambda0 0.5 − 0", "lambda0=0.5", "lambda0=0"),
    ("lambda0 0.5 − 1", "lambda0=0.5", "lambda0=1"),
)
"""The default-testbed claims' comparisons (docs/sequential.md): the detector order's two and the
lambda0 concavity's two, uniform being lambda0 = 0.5."""


def testbed_looks(schedule: Schedule, looks: Sequence[int] = (3, 6)) -> list[list[str]]:
    """The test on the logged finals (``worlds.testbed_finals``, seeds in order), each
    comparison one of its claim's 2: estimate, interval and decision at each of ``looks`` seeds."""
    finals = testbed_finals()
    rows = []
    for name, a, b in TESTBED_COMPARISONS:
        cells = [name]
        for seeds in looks:
            differences = finals[a][:seeds] - finals[b][:seeds]
            level = sequential.claim_level(schedule.alpha, 2)
            low, high = sequential.interval(differences, level)
            decision = sequential.shown(differences[None], GREATER, level, schedule.margin)[0, -1]
            cells.append(f"{100 * differences.mean():+.2f} pts, [{100 * low:+.2f}, {100 * high:+.2f}]: {decision}")
        rows.append(cells)
    return rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.benches.sequential", description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20000)
    parser.add_argument("--max-seeds", type=int, default=sequential.MAX_SEEDS)
    args = parser.parse_args(argv)
    schedule = Schedule.rounds(args.max_seeds)
    began = time.monotonic()
    print(f"design {schedule.tag()}; {args.replicates} replicates per world; alpha {basic.ALPHA:g}\n")
    print("Worst false decisions over the grid, per candidate:\n")
    print(markdown(["Candidate", *COLUMN_NAMES, "World of the worst"], validity(schedule, args.replicates)))
    print("\nPower (P('a > b' holds)) per candidate, and the default's mean seeds:\n")
    print(markdown(["World", "True diff (pts)", *CANDIDATES, "Mean seeds (default)"], power(schedule, args.replicates)))
    print("\nThe default design, false decisions per world and verdict: sequential (fixed-n at the budget):\n")
    print(
        markdown(
            ["World", "True diff (pts)", *COLUMN_NAMES],
            per_world(schedule, args.replicates),
        )
    )
    print("\nAny false decision among 5 comparisons of one claim (all cells equal):\n")
    print(markdown(["World", "Bonferroni (design)", "each at alpha"], familywise(schedule, args.replicates)))
    print("\nOn the testbed's logged finals, each comparison at 2.5% (97.5% intervals):\n")
    print(markdown(["Comparison", "Look 1 (3 seeds)", "Look 2 (6 seeds)"], testbed_looks(schedule)))
    print(f"\n({time.monotonic() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
