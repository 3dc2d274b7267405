"""Run seeds in rounds and decide each comparison as soon as its evidence allows, at a level that
holds however many looks are made and whatever shape the per-seed outcomes have.

Pure functions of arrays, no I/O (``gaca.orchestration.until_decided`` runs the rounds,
``analysis.sequential_replay`` replays them on logged runs, ``analysis.paper_claims`` uses the same test
at a fixed seed count).

**The test.** A comparison's outcome per seed is a paired difference of two success rates, bounded
in [-1, 1]. Each verdict is a one-sided test of its mean by betting (``analysis.betting``), valid at
every seed count at once (Ville's inequality), so looking after every round needs no alpha spending,
no boundaries and no calibration, and nothing about the outcomes' shape is assumed: a
learn-or-collapse mixture, a gain that comes from a higher chance to learn, and seeds that agree by
all collapsing (identical differences grow no capital and decide nothing) are all covered. At
level alpha (``Schedule.alpha``):

- "a > b" (``GREATER``) **holds** when "the mean difference exceeds 0" is shown at alpha / 2, is
  **contradicted** when "it is below 0" is shown at alpha / 2 (together at most alpha of false
  decisions, as a two-sided test), and is **equivalent** when both "it exceeds -margin" and "it is
  below +margin" are shown, each at alpha (two one-sided tests, TOST: a false "equivalent" needs
  one of them to fail, so at most alpha).
- "a does not improve on b" (``NO_GAIN``) **holds** when "the gain is below +margin" is shown at
  alpha (one one-sided test) and is **contradicted** when "the gain exceeds +margin" is shown at
  alpha; ``tost_equivalent`` adds whether "it exceeds -margin" is shown too (then the two are
  equivalent within the margin by TOST, each test at alpha, rather than a being worse).

A comparison is decided at the first look at which one of its verdicts is shown and keeps it. The
stakes are the paper's for every seed count with the cap c = 1 (``betting.TRUNCATION``), the most
powerful of the valid candidates in docs/sequential.md; the fixed-n report uses the same test once.

With c = 1 and n equal differences +d the capital against 0 is (1 + d)^n, so "a > b" holds at 5%
(2.5% a side) once (1 + d)^n >= 40: d >= 27.9 points with 15 seeds. No test valid for every bounded
shape does better on such data: in the world where a seed shows +d with probability 1 / (1 + d) and
-1 otherwise the mean is 0, and all n seeds show +d with probability (1 + d)^-n. Within a claim of k comparisons each is
tested at alpha / k (Bonferroni, ``claim_level``), so a claim makes any false decision among its
parts with probability at most alpha.

What no valid test can do: a 3-point margin cannot be shown from few seeds. If every seed of both
arms collapses to 0, the differences are all 0, and so they are, with probability 0.97^n, in a
world where one seed in 33 gains a whole 100 points (a true gain of 3): "does not help" and
"equivalent" at 5% need 0.97^n <= 0.05, n >= 99 seeds, for any test valid for bounded outcomes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis import betting, stats

HOLDS, CONTRADICTED, EQUIVALENT, CONTINUE = "holds", "contradicted", "equivalent", "continue"
GREATER, NO_GAIN = "greater", "no gain"
"""The two kinds of comparison a claim makes: "a > b" and "a does not improve on b"."""
FIRST_ROUND = 3
ROUND = 3
MAX_SEEDS = 15
"""Default design: 3 seeds, then 3 more per round, up to 15 (looks 3, 6, 9, 12, 15)."""
TEST = "betting"
"""The tag's name of the test (``analysis.betting``, stakes tuned to the maximum seeds)."""


def check_level(alpha: float, option: str = "alpha") -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"{option} must be in (0, 0.5), got {alpha:g}")


def check_margin(margin: float, option: str = "margin") -> None:
    if not 0 <= margin < betting.HIGH:
        raise ValueError(f"{option} must be in [0, {betting.HIGH:g}) (success units), got {margin:g}")


@dataclass(frozen=True)
class Schedule:
    """The planned looks (seeds after each round), the level and the margin. Written once when a
    sequential block starts and never changed (a different one is refused)."""

    looks: tuple[int, ...]
    alpha: float = stats.ALPHA
    margin: float = stats.EQUIVALENCE_MARGIN

    def __post_init__(self) -> None:
        if len(self.looks) == 0 or self.looks[0] < 2 or any(b <= a for a, b in zip(self.looks, self.looks[1:])):
            raise ValueError(f"looks must be increasing seed counts from 2, got {list(self.looks)}")
        check_level(self.alpha)
        check_margin(self.margin)

    @classmethod
    def rounds(
        cls,
        max_seeds: int = MAX_SEEDS,
        first: int = FIRST_ROUND,
        step: int = ROUND,
        alpha: float = stats.ALPHA,
        margin: float = stats.EQUIVALENCE_MARGIN,
    ) -> Schedule:
        """Looks at ``first``, then every ``step`` more seeds, the last at ``max_seeds``."""
        if first < 2:
            raise ValueError(f"--first-round must be at least 2 seeds, got {first}")
        if max_seeds < first:
            raise ValueError(f"--max-seeds must be at least the first round's {first} seeds, got {max_seeds}")
        if step < 1:
            raise ValueError(f"--round must add at least 1 seed, got {step}")
        looks = list(range(first, max_seeds + 1, step))
        if looks[-1] != max_seeds:
            looks.append(max_seeds)
        return cls(tuple(looks), alpha, margin)

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    def look_of(self, seeds: int) -> int | None:
        """The index of the look made at ``seeds`` seeds, None when none is planned there."""
        return self.looks.index(seeds) if seeds in self.looks else None

    def tag(self) -> str:
        """The run tag and store record of the design: ``looks=3,6,9;test=betting;alpha=0.05;margin=0.03``."""
        return f"looks={','.join(map(str, self.looks))};test={TEST};alpha={self.alpha:g};margin={self.margin:g}"

    @classmethod
    def from_tag(cls, text: str) -> Schedule:
        try:
            fields = dict(part.split("=", 1) for part in text.split(";"))
            if fields.get("test") != TEST:
                raise ValueError(f"test {fields.get('test')!r} is not {TEST!r}")
            return cls(
                tuple(int(n) for n in fields["looks"].split(",")), float(fields["alpha"]), float(fields["margin"])
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"not a sequential design tag of this version: {text!r} ({error})") from None


def claim_level(alpha: float, parts: int) -> float:
    """The level each of a claim's ``parts`` comparisons is tested at (Bonferroni)."""
    return alpha / max(parts, 1)


def shown(
    differences: np.ndarray,
    kind: str,
    alpha: float,
    margin: float,
    horizon: int | None = None,
    truncation: float = betting.TRUNCATION,
) -> np.ndarray:
    """The verdict each seed count shows (``HOLDS``, ``CONTRADICTED``, ``EQUIVALENT`` or ``CONTINUE``):
    ``differences`` ``(..., n)`` per-seed paired differences in seed order, same shape out (object)."""
    differences = np.asarray(differences, dtype=float)
    out = np.full(differences.shape, CONTINUE, dtype=object)
    if differences.shape[-1] == 0:
        return out
    if kind == GREATER:
        out[tost_equivalent(differences, alpha, margin, horizon, truncation)] = EQUIVALENT
        out[betting.falls_short(differences, 0.0, alpha / 2.0, horizon, truncation)] = CONTRADICTED
        out[betting.exceeds(differences, 0.0, alpha / 2.0, horizon, truncation)] = HOLDS
    elif kind == NO_GAIN:
        out[betting.exceeds(differences, margin, alpha, horizon, truncation)] = CONTRADICTED
        out[betting.falls_short(differences, margin, alpha, horizon, truncation)] = HOLDS
    else:
        raise ValueError(f"kind must be {GREATER!r} or {NO_GAIN!r}, got {kind!r}")
    return out


def tost_equivalent(
    differences: np.ndarray,
    alpha: float,
    margin: float,
    horizon: int | None = None,
    truncation: float = betting.TRUNCATION,
) -> np.ndarray:
    """Per seed count, whether the mean lies inside (-margin, +margin) by two one-sided tests at ``alpha``."""
    return betting.exceeds(differences, -margin, alpha, horizon, truncation) & betting.falls_short(
        differences, margin, alpha, horizon, truncation
    )


@dataclass(frozen=True)
class Stopped:
    """The procedure on simulated or measured arrays: per replicate, the look it stopped at (index,
    or the last), the decision and the seeds used."""

    look: np.ndarray
    decision: np.ndarray
    seeds: np.ndarray


def run_sequential(differences: np.ndarray, schedule: Schedule, kind: str = GREATER, parts: int = 1) -> Stopped:
    """The procedure on per-seed paired differences ``(replicates, max seeds)``: looks in order,
    each replicate stopping at its first decision; ``parts``: the comparisons of its claim."""
    at_looks = np.asarray(schedule.looks) - 1
    level = claim_level(schedule.alpha, parts)
    verdicts = shown(differences[:, : schedule.max_seeds], kind, level, schedule.margin)
    verdicts = verdicts[:, at_looks]
    decided = verdicts != CONTINUE
    look = np.where(decided.any(axis=1), decided.argmax(axis=1), len(schedule.looks) - 1)
    rows = np.arange(len(look))
    return Stopped(look, verdicts[rows, look], np.asarray(schedule.looks)[look])


def run_fixed(
    differences: np.ndarray,
    alpha: float = stats.ALPHA,
    margin: float = stats.EQUIVALENCE_MARGIN,
    kind: str = GREATER,
    parts: int = 1,
) -> np.ndarray:
    """The decision on all n seeds at once (``(..., n)`` in, ``(...)`` out): the same test, read once
    after the last seed (no stopping early)."""
    return shown(differences, kind, claim_level(alpha, parts), margin)[..., -1]


def interval(differences: np.ndarray, alpha: float) -> tuple[float, float]:
    """The two-sided 1 - ``alpha`` interval of a comparison's mean after its last seed
    (``betting.interval``: the means neither "holds" nor "contradicted" would reject); (NaN, NaN)
    without seeds."""
    if len(differences) == 0:
        return math.nan, math.nan
    return betting.interval(np.asarray(differences, dtype=float), alpha)
