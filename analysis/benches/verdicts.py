"""Every verdict kind simulated on worlds a user supplies (``gaca bench verdicts --worlds FILE``): how
often "a > b" holds, is contradicted or is equivalent, and how often "does not help" holds, at fixed
seed counts and run until decided, for the earlier test by betting and the sign-flip tests under each
assumption, on the same draws.

A world file is JSON, a list of worlds, each either

- ``{"name": str, "a": [[weight, mean, sd], ...], "b": [[weight, mean, sd], ...], "seed_sd": float}``:
  per seed each arm's final success is drawn from its normal mixture (weights summing to 1, means in
  [0, 1], sd >= 0) plus a normal seed effect shared by both arms of the seed (``seed_sd``, optional,
  default 0), clipped to [0, 1]; or
- ``{"name": str, "pairs": [[a, b], ...]}``: seeds drawn with replacement from these (a, b) finals in
  [0, 1] (e.g. a block's runs, paired by seed).

A world's true mean difference is computed from a large draw (``TRUE_DRAWS``) for mixtures and exactly
for pairs; it is printed beside the rates so that a reader can tell a false decision from a true one.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.stats import basic, sequential
from analysis.stats.sequential import CONTRADICTED, EQUIVALENT, GREATER, HOLDS, NO_GAIN, NONE, SHIFT, Schedule

TRUE_DRAWS = 400_000
BENCH_SEED = 45
DEFAULT_SEEDS = (5, 10, 15)
DEFAULT_REPLICATES = 2000
COLUMNS = (
    "world",
    "true_diff",
    "test",
    "assume",
    "design",
    "seeds",
    "holds",
    "contradicted",
    "equivalent",
    "does_not_help",
    "mean_seeds",
)
"""The CSV's columns: rates as fractions in [0, 1]; for ``sequential`` seeds is the maximum and
``mean_seeds`` the seeds used on average; ``true_diff`` a - b in success units."""
TESTS = (
    (sequential.TEST_BETTING, NONE),
    (sequential.TEST_SIGNFLIP, SHIFT),
    (sequential.TEST_SIGNFLIP, NONE),
)
"""The (test, assumption) pairs compared: the earlier betting design, and the sign-flip tests with each
assumption for "equivalent" and "does not help"."""


EPROCESS = "eprocess"
EPROCESS_STAKES = np.linspace(0.05, 0.95, 19)
"""The stakes the symmetry e-process mixes (the alternative to the group-sequential test weighed in
docs/sequential.md; it decides "a > b" only)."""


def symmetry_eprocess(differences: np.ndarray, looks: Sequence[int], level: float) -> np.ndarray:
    """Per replicate, whether a test martingale for symmetry about 0 reaches 1 / ``level`` at one of
    ``looks``: the mean over ``EPROCESS_STAKES`` of prod (1 + stake f_i), f_i = d_i over the largest |d|
    of the seeds before it, clipped to [-1, 1] (an odd function of d_i given the past, so each factor has
    mean 1 under the sharp null and Ville's inequality bounds the level at every look)."""
    x = np.asarray(differences, dtype=float)
    previous = np.maximum.accumulate(np.abs(x), axis=1)
    scale = np.maximum(np.concatenate([np.ones((x.shape[0], 1)), previous[:, :-1]], axis=1), 1e-3)
    f = np.clip(x / scale, -1.0, 1.0)
    capital = np.mean(np.cumprod(1.0 + EPROCESS_STAKES[None, :, None] * f[:, None, :], axis=2), axis=1)
    return (capital[:, np.asarray(looks) - 1] >= 1.0 / level).any(axis=1)


class WorldError(ValueError):
    """A malformed world: its message names the world and the key."""


@dataclass(frozen=True)
class MixtureWorld:
    name: str
    a: tuple[tuple[float, float, float], ...]
    b: tuple[tuple[float, float, float], ...]
    seed_sd: float = 0.0

    def draw(self, rng: np.random.Generator, replicates: int, seeds: int) -> np.ndarray:
        """``(replicates, seeds)`` differences a - b."""
        shape = (replicates, seeds)
        effect = rng.standard_normal(shape) * self.seed_sd
        return _arm(rng, self.a, shape, effect) - _arm(rng, self.b, shape, effect)

    def true_difference(self) -> float:
        return float(self.draw(np.random.default_rng([BENCH_SEED, 0]), TRUE_DRAWS // 100, 100).mean())


@dataclass(frozen=True)
class PairsWorld:
    name: str
    pairs: tuple[tuple[float, float], ...]

    def draw(self, rng: np.random.Generator, replicates: int, seeds: int) -> np.ndarray:
        pairs = np.asarray(self.pairs)
        chosen = rng.integers(0, len(pairs), (replicates, seeds))
        return pairs[chosen, 0] - pairs[chosen, 1]

    def true_difference(self) -> float:
        pairs = np.asarray(self.pairs)
        return float(np.mean(pairs[:, 0] - pairs[:, 1]))


World = MixtureWorld | PairsWorld


def _arm(
    rng: np.random.Generator, parts: Sequence[tuple[float, float, float]], shape: tuple[int, int], effect: np.ndarray
) -> np.ndarray:
    weights = np.array([w for w, _, _ in parts])
    component = rng.choice(len(parts), size=shape, p=weights / weights.sum())
    means = np.array([m for _, m, _ in parts])[component]
    sds = np.array([s for _, _, s in parts])[component]
    return np.clip(means + sds * rng.standard_normal(shape) + effect, 0.0, 1.0)


def parse_worlds(text: str, source: str = "worlds") -> list[World]:
    """The worlds of a JSON text; ``WorldError`` naming the world and the key on the first problem."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise WorldError(f"{source}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(raw, list) or not raw:
        raise WorldError(f"{source}: must be a non-empty JSON list of worlds")
    worlds: list[World] = []
    names: set[str] = set()
    for index, item in enumerate(raw):
        label = f"world {index}"
        if not isinstance(item, dict):
            raise WorldError(f"{label}: must be an object with 'name' and 'a'/'b' or 'pairs'")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise WorldError(f"{label}: key 'name' must be a non-empty string")
        label = f"world {name!r}"
        if name in names:
            raise WorldError(f"{label}: key 'name' repeats an earlier world's")
        names.add(name)
        if "pairs" in item:
            worlds.append(PairsWorld(name, _pairs(label, item)))
            continue
        for key in ("a", "b"):
            if key not in item:
                raise WorldError(f"{label}: missing key {key!r} (or give 'pairs')")
        unknown = sorted(set(item) - {"name", "a", "b", "seed_sd"})
        if unknown:
            raise WorldError(f"{label}: unknown key {unknown[0]!r}; allowed: name, a, b, seed_sd (or name, pairs)")
        seed_sd = item.get("seed_sd", 0.0)
        if not _number(seed_sd) or seed_sd < 0:
            raise WorldError(f"{label}: key 'seed_sd' must be a number >= 0, got {seed_sd!r}")
        worlds.append(
            MixtureWorld(name, _mixture(label, "a", item["a"]), _mixture(label, "b", item["b"]), float(seed_sd))
        )
    return worlds


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _mixture(label: str, key: str, parts: object) -> tuple[tuple[float, float, float], ...]:
    if not isinstance(parts, list) or not parts:
        raise WorldError(f"{label}: key {key!r} must be a non-empty list of [weight, mean, sd]")
    out = []
    for part in parts:
        if not isinstance(part, list) or len(part) != 3 or not all(_number(v) for v in part):
            raise WorldError(f"{label}: key {key!r}: each component must be [weight, mean, sd] numbers, got {part!r}")
        weight, mean, sd = (float(v) for v in part)
        if weight < 0:
            raise WorldError(f"{label}: key {key!r}: a weight must be >= 0, got {weight:g}")
        if not 0.0 <= mean <= 1.0:
            raise WorldError(f"{label}: key {key!r}: a mean must lie in [0, 1], got {mean:g}")
        if sd < 0:
            raise WorldError(f"{label}: key {key!r}: an sd must be >= 0, got {sd:g}")
        out.append((weight, mean, sd))
    total = sum(w for w, _, _ in out)
    if abs(total - 1.0) > 1e-6:
        raise WorldError(f"{label}: key {key!r}: the weights must sum to 1, got {total:g}")
    return tuple(out)


def _pairs(label: str, item: dict) -> tuple[tuple[float, float], ...]:
    unknown = sorted(set(item) - {"name", "pairs"})
    if unknown:
        raise WorldError(f"{label}: unknown key {unknown[0]!r} beside 'pairs'; allowed: name, pairs")
    pairs = item["pairs"]
    if not isinstance(pairs, list) or not pairs:
        raise WorldError(f"{label}: key 'pairs' must be a non-empty list of [a, b]")
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2 or not all(_number(v) and 0 <= v <= 1 for v in pair):
            raise WorldError(f"{label}: key 'pairs': each must be [a, b] with both in [0, 1], got {pair!r}")
    return tuple((float(a), float(b)) for a, b in pairs)


@dataclass(frozen=True)
class Row:
    world: str
    true_diff: float
    test: str
    assume: str
    design: str
    seeds: int
    holds: float
    contradicted: float
    equivalent: float
    does_not_help: float
    mean_seeds: float


def simulate(
    worlds: Sequence[World],
    seeds: Sequence[int] = DEFAULT_SEEDS,
    replicates: int = DEFAULT_REPLICATES,
    margin: float = basic.EQUIVALENCE_MARGIN,
    alpha: float = basic.ALPHA,
    assume: Sequence[str] = (SHIFT, NONE),
    progress: bool = False,
    eprocess: bool = False,
) -> list[Row]:
    """Per world, seed count, design and (test, assumption), the rates of each verdict over
    ``replicates`` simulated experiments; every test reads the same draws. ``eprocess``: also the
    symmetry e-process's "a > b" run until decided (NaN for the verdicts it does not give)."""
    rows = []
    began = time.monotonic()
    pairs = [(test, mode) for test, mode in TESTS if test == sequential.TEST_BETTING or mode in assume]
    for number, world in enumerate(worlds):
        truth = world.true_difference()
        for n in seeds:
            x = world.draw(np.random.default_rng([BENCH_SEED, number, n]), replicates, n)
            for test, mode in pairs:
                for design in ("fixed", "sequential"):
                    schedule = (
                        Schedule((n,), alpha, margin, test, mode)
                        if design == "fixed"
                        else Schedule.rounds(n, alpha=alpha, margin=margin, assume=mode)
                    )
                    if design == "sequential" and test == sequential.TEST_BETTING:
                        schedule = Schedule(schedule.looks, alpha, margin, test, NONE)
                    greater = sequential.run_sequential(x, schedule, GREATER)
                    no_gain = sequential.run_sequential(x, schedule, NO_GAIN)
                    rows.append(
                        Row(
                            world.name,
                            truth,
                            test,
                            mode,
                            design,
                            n,
                            float(np.mean(greater.decision == HOLDS)),
                            float(np.mean(greater.decision == CONTRADICTED)),
                            float(np.mean(greater.decision == EQUIVALENT)),
                            float(np.mean(no_gain.decision == HOLDS)),
                            float(greater.seeds.mean()),
                        )
                    )
            if eprocess:
                looks = Schedule.rounds(n).looks
                holds = symmetry_eprocess(x, looks, alpha / 2.0)
                against = symmetry_eprocess(-x, looks, alpha / 2.0)
                nan = math.nan
                rows.append(
                    Row(
                        world.name,
                        truth,
                        EPROCESS,
                        NONE,
                        "sequential",
                        n,
                        float(holds.mean()),
                        float(against.mean()),
                        nan,
                        nan,
                        nan,
                    )
                )
        if progress:
            done = number + 1
            rate = done / max(time.monotonic() - began, 1e-9)
            eta = (len(worlds) - done) / rate
            print(
                f"{done}/{len(worlds)} worlds ({60 * rate:.1f}/min), ETA {eta // 60:.0f}:{eta % 60:02.0f}",
                file=sys.stderr,
                flush=True,
            )
    return rows


def to_csv(rows: Sequence[Row], assume_column: bool = True) -> str:
    buffer = io.StringIO()
    columns = [c for c in COLUMNS if assume_column or c != "assume"]
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_value(getattr(row, column)) for column in columns])
    return buffer.getvalue()


def _csv_value(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def to_markdown(rows: Sequence[Row], assume_column: bool = True) -> str:
    """One table: a row per world and seed count, a column group per (test, assumption, design)."""
    groups = list(dict.fromkeys((r.test, r.assume, r.design) for r in rows))
    keys = list(dict.fromkeys((r.world, r.true_diff, r.seeds) for r in rows))
    found = {(r.world, r.seeds, r.test, r.assume, r.design): r for r in rows}
    header = ["World", "a − b (pts)", "Seeds"] + [
        f"{_test_name(test, mode if assume_column else '')} {design}" for test, mode, design in groups
    ]
    lines = ["| " + " | ".join(header) + " |", "| --- | ---: | ---: | " + " | ".join("---" for _ in groups) + " |"]
    for world, truth, n in keys:
        cells = []
        for test, mode, design in groups:
            r = found[(world, n, test, mode, design)]
            cell = f"{_pct(r.holds)} / {_pct(r.contradicted)} / {_pct(r.equivalent)} / {_pct(r.does_not_help)}"
            cells.append(
                cell + (f" ({r.mean_seeds:.1f})" if design == "sequential" and r.mean_seeds == r.mean_seeds else "")
            )
        lines.append(f"| {world} | {100 * truth:+.1f} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _test_name(test: str, mode: str) -> str:
    if test == sequential.TEST_BETTING:
        return "betting (earlier)"
    if test == EPROCESS:
        return "symmetry e-process"
    return f"sign-flip, {mode}" if mode else "sign-flip"


def _pct(rate: float) -> str:
    return "-" if math.isnan(rate) else f"{100 * rate:.1f}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gaca bench verdicts",
        description="Simulate every verdict kind on worlds from a JSON file (analysis/benches/verdicts.py).",
    )
    parser.add_argument("--worlds", required=True, type=Path, help="JSON list of worlds (see the module docstring)")
    parser.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)), help="seed counts, e.g. 10,15")
    parser.add_argument("--replicates", type=int, default=DEFAULT_REPLICATES, help="simulated experiments per world")
    parser.add_argument(
        "--margin", type=float, default=100 * basic.EQUIVALENCE_MARGIN, help="equivalence margin in points"
    )
    parser.add_argument("--alpha", type=float, default=basic.ALPHA, help="level of the verdicts")
    parser.add_argument(
        "--assume",
        action="append",
        help=f"assumption of 'equivalent'/'does not help' ({', '.join(sequential.ASSUMPTIONS)}); "
        "repeatable; default both",
    )
    parser.add_argument(
        "--eprocess", action="store_true", help="add the symmetry e-process's 'a > b' (run until decided)"
    )
    parser.add_argument("--format", choices=("csv", "markdown"), default="markdown")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        seeds = _seed_counts(args.seeds)
        if args.replicates < 1:
            raise ValueError(f"--replicates must be at least 1, got {args.replicates}")
        sequential.check_level(args.alpha, "--alpha")
        if not 0 <= args.margin < 100:
            raise ValueError(f"--margin must be in [0, 100) points, got {args.margin:g}")
        assume = tuple(dict.fromkeys(args.assume or sequential.ASSUMPTIONS))
        for mode in assume:
            sequential.check_assume(mode, "--assume")
        try:
            text = args.worlds.read_text()
        except OSError as error:
            raise ValueError(f"--worlds: cannot read {args.worlds}: {error.strerror}") from None
        worlds = parse_worlds(text, str(args.worlds))
    except ValueError as error:
        print(f"gaca bench verdicts: {error}", file=sys.stderr)
        return 2
    began = time.monotonic()
    rows = simulate(
        worlds, seeds, args.replicates, args.margin / 100.0, args.alpha, assume, progress=True, eprocess=args.eprocess
    )
    several = len(assume) > 1
    if args.format == "csv":
        print(to_csv(rows, several), end="")
        return 0
    print(
        f"{args.replicates} replicates per world and seed count; alpha {args.alpha:g}; margin ±{args.margin:g} pts. "
        "Each cell: % of experiments in which 'a > b' holds / is contradicted / is equivalent / 'does not help' "
        "holds; sequential: looks at 3, 6, ... up to the seeds (mean seeds used).\n"
    )
    print(to_markdown(rows, several))
    print(f"\n({time.monotonic() - began:.0f} s)")
    return 0


def _seed_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated whole numbers, got {text!r}") from None
    if not counts or min(counts) < 3:
        raise ValueError(f"--seeds must each be at least 3 (the first look), got {text!r}")
    return counts


if __name__ == "__main__":
    raise SystemExit(main())
