"""Run seeds in rounds and decide each comparison as soon as its evidence allows, at a level that
holds however many looks are made; and the same tests once at a fixed seed count.

Pure functions of arrays, no I/O (``gaca.orchestration.until_decided`` runs the rounds,
``analysis.claims.replay`` replays them on logged runs, ``analysis.claims.checks`` uses the same tests
at a fixed seed count).

**The tests.** A comparison's outcome per seed is a paired difference of two success rates in [-1, 1].
At level alpha (``Schedule.alpha``; within a claim of k comparisons each at alpha / k, Bonferroni):

- "a > b" (``GREATER``) **holds** when the exact sign-flip test (``analysis.stats.signflip``) shows the
  differences lean positive at alpha / 2, and is **contradicted** when it shows them lean negative at
  alpha / 2. Exact under Fisher's sharp null (the two runs of a seed exchangeable when the estimator
  makes no difference), at any seed count and for any outcome shape; as a statement about the *mean*
  gain it assumes a shift (a = b + constant, symmetric noise). Run until decided, it is the
  group-sequential sign-flip test at the design's looks with O'Brien-Fleming-type spending.
- "a > b" is **equivalent** when "a - b > -margin" and "a - b < +margin" are both shown, each at alpha
  (two one-sided tests, TOST), and "a does not improve on b" (``NO_GAIN``) **holds** when "the gain is
  below +margin" is shown at alpha and is **contradicted** when "it exceeds +margin" is. These need a
  statement about a mean, so they name an assumption (``ASSUMPTIONS``): ``shift`` tests d -/+ margin by
  sign flips (exact when the effect is a shift with symmetric noise; wrong far more often than alpha
  when one arm's gain is a few seeds that learn), ``none`` by betting (``analysis.stats.betting``: valid for
  any bounded shape, and so unable to decide below some 55-99 seeds).

``TEST_BETTING`` is the earlier design, every verdict by betting; a design stored with it is replayed
with it (its tag says ``test=betting``).

With n seeds no exact test shows a side below 2^-n (``signflip.reachable``): 5 seeds cannot reach
2.5% (2^-5 = 3.1%), and the paper's three seeds per cell decide nothing at 5% by any exact test.

What no test valid for every bounded shape can do (why ``none`` decides nothing at laptop seed counts):
in the world where a seed shows +d with probability 1 / (1 + d) and -1 otherwise the mean is 0, and all
n seeds show +d with probability (1 + d)^-n, so such a test may say "holds" on n equal differences +d
only once (1 + d)^n >= 1 / level: d >= 27.9 points at 15 seeds and 2.5%. Likewise, seeds that all
collapse in both arms show differences of exactly 0, as they do with probability 0.97^n in a world
where one seed in 33 gains 100 points: "does not help" within 3 points needs n >= 99 shape-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.stats import basic, betting, signflip

HOLDS, CONTRADICTED, EQUIVALENT, CONTINUE = "holds", "contradicted", "equivalent", "continue"
GREATER, NO_GAIN = "greater", "no gain"
"""The two kinds of comparison a claim makes: "a > b" and "a does not improve on b"."""
FIRST_ROUND = 3
ROUND = 3
MAX_SEEDS = 15
"""Default design: 3 seeds, then 3 more per round, up to 15 (looks 3, 6, 9, 12, 15)."""
TEST_SIGNFLIP, TEST_BETTING = "signflip", "betting"
TEST = TEST_SIGNFLIP
"""The tag's name of the test of new designs (``analysis.stats.signflip``, group-sequential)."""
SHIFT, NONE = "shift", "none"
ASSUMPTIONS = {
    SHIFT: "assumes a shift with symmetric noise (sign-flip tests of d -/+ margin)",
    NONE: "shape-free (tests by betting, valid for any bounded outcome)",
}
"""What "equivalent" and "does not help" may assume, and how a verdict names it."""
DEFAULT_ASSUME = SHIFT
"""Chosen by the power and validity table of docs/sequential.md: shape-free TOST decides nothing below
some 55-99 seeds; the shift model decides at 10-15 seeds and keeps its level wherever the effect is a
shift, and says so beside every verdict it gives."""
SHARP_NULL = "exact under the sharp null; a gain in the mean assumes a shift"
"""What a sign-flip "holds" or "contradicted" rests on."""


def check_level(alpha: float, option: str = "alpha") -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"{option} must be in (0, 0.5), got {alpha:g}")


def check_margin(margin: float, option: str = "margin") -> None:
    if not 0 <= margin < betting.HIGH:
        raise ValueError(f"{option} must be in [0, {betting.HIGH:g}) (success units), got {margin:g}")


def check_assume(assume: str, option: str = "assume") -> None:
    if assume not in ASSUMPTIONS:
        raise ValueError(f"{option} must be one of {', '.join(ASSUMPTIONS)}, got {assume!r}")


def assumption(kind: str, verdict: str, assume: str, test: str = TEST) -> str:
    """What ``verdict`` on a ``kind`` comparison rests on, in words (empty when undecided)."""
    if verdict == CONTINUE:
        return ""
    if test == TEST_BETTING:
        return ASSUMPTIONS[NONE]
    if kind == GREATER and verdict in (HOLDS, CONTRADICTED):
        return SHARP_NULL
    return ASSUMPTIONS[assume]


@dataclass(frozen=True)
class Schedule:
    """The planned looks (seeds after each round), the level, the margin, the test and what
    "equivalent" may assume. Written once when a sequential block starts and never changed (a
    different one is refused)."""

    looks: tuple[int, ...]
    alpha: float = basic.ALPHA
    margin: float = basic.EQUIVALENCE_MARGIN
    test: str = TEST
    assume: str = DEFAULT_ASSUME
    spending: str = signflip.DEFAULT_SPENDING

    def __post_init__(self) -> None:
        if len(self.looks) == 0 or self.looks[0] < 2 or any(b <= a for a, b in zip(self.looks, self.looks[1:])):
            raise ValueError(f"looks must be increasing seed counts from 2, got {list(self.looks)}")
        check_level(self.alpha)
        check_margin(self.margin)
        check_assume(self.assume)
        signflip.check_spending(self.spending)
        if self.test not in (TEST_SIGNFLIP, TEST_BETTING):
            raise ValueError(f"test must be {TEST_SIGNFLIP!r} or {TEST_BETTING!r}, got {self.test!r}")

    @classmethod
    def rounds(
        cls,
        max_seeds: int = MAX_SEEDS,
        first: int = FIRST_ROUND,
        step: int = ROUND,
        alpha: float = basic.ALPHA,
        margin: float = basic.EQUIVALENCE_MARGIN,
        assume: str = DEFAULT_ASSUME,
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
        return cls(tuple(looks), alpha, margin, assume=assume)

    @classmethod
    def fixed(
        cls,
        seeds: int,
        alpha: float = basic.ALPHA,
        margin: float = basic.EQUIVALENCE_MARGIN,
        assume: str = DEFAULT_ASSUME,
    ) -> Schedule:
        """One look after ``seeds`` seeds: the fixed-n tests."""
        return cls((max(seeds, 2),), alpha, margin, assume=assume)

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    def look_of(self, seeds: int) -> int | None:
        """The index of the look made at ``seeds`` seeds, None when none is planned there."""
        return self.looks.index(seeds) if seeds in self.looks else None

    def tag(self) -> str:
        """The run tag and store record of the design:
        ``looks=3,6,9;test=signflip;spending=obf;assume=shift;alpha=0.05;margin=0.03``."""
        looks = ",".join(map(str, self.looks))
        if self.test == TEST_BETTING:
            return f"looks={looks};test={TEST_BETTING};alpha={self.alpha:g};margin={self.margin:g}"
        return (
            f"looks={looks};test={self.test};spending={self.spending};assume={self.assume};"
            f"alpha={self.alpha:g};margin={self.margin:g}"
        )

    @classmethod
    def from_tag(cls, text: str) -> Schedule:
        """The design of a tag, the earlier betting design's included (it is replayed with its own test)."""
        try:
            fields = dict(part.split("=", 1) for part in text.split(";"))
            test = fields.get("test")
            if test not in (TEST_SIGNFLIP, TEST_BETTING):
                raise ValueError(f"test {test!r} is not {TEST_SIGNFLIP!r} or {TEST_BETTING!r}")
            return cls(
                tuple(int(n) for n in fields["looks"].split(",")),
                float(fields["alpha"]),
                float(fields["margin"]),
                test,
                fields.get("assume", NONE),
                fields.get("spending", signflip.DEFAULT_SPENDING),
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"not a sequential design tag of this version: {text!r} ({error})") from None

    def describe(self) -> str:
        """The tests in words, for a report or a round's output."""
        if self.test == TEST_BETTING:
            return "tests by betting valid at every look (shape-free)"
        return (
            f"group-sequential exact sign-flip tests ({self.spending} spending over the looks; "
            f"equivalence {ASSUMPTIONS[self.assume]})"
        )


def claim_level(alpha: float, parts: int) -> float:
    """The level each of a claim's ``parts`` comparisons is tested at (Bonferroni)."""
    return alpha / max(parts, 1)


def reachable(seeds: int, kind: str, level: float) -> bool:
    """Whether an exact test on ``seeds`` seeds can decide a ``kind`` comparison at ``level``: "a > b"
    shows a side at ``level`` / 2, "does not help" at ``level``."""
    return signflip.reachable(seeds, level / 2.0 if kind == GREATER else level)


def unreachable_line(seeds: int, kind: str, level: float) -> str:
    """The one line a report gives instead of a verdict no exact test can reach."""
    side = level / 2.0 if kind == GREATER else level
    return (
        f"not tested: with {seeds} seed{'s' if seeds != 1 else ''} no exact test reaches {100 * side:.3g}% a side "
        f"(its smallest p is 2^-{seeds} = {100 * 2.0**-seeds:.3g}%; {signflip.fewest_seeds(side)} seeds are the fewest)"
    )


def shown(
    differences: np.ndarray,
    kind: str,
    alpha: float,
    margin: float,
    horizon: int | None = None,
    truncation: float = betting.TRUNCATION,
) -> np.ndarray:
    """The verdict each seed count shows by betting (``TEST_BETTING``, valid at every seed count):
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
    """Per seed count, whether the mean lies inside (-margin, +margin) by two one-sided tests by betting
    at ``alpha``."""
    return betting.exceeds(differences, -margin, alpha, horizon, truncation) & betting.falls_short(
        differences, margin, alpha, horizon, truncation
    )


def per_look(
    differences: np.ndarray, kind: str, level: float, schedule: Schedule, looks: int | None = None
) -> np.ndarray:
    """The verdict each of the first ``looks`` looks of ``schedule`` shows on ``differences`` ``(R, n)``
    (seeds in order, n at least the last of those looks), each comparison at ``level``: ``(R, looks)``
    (object). A sign-flip verdict at look k is that of the group-sequential test with the looks up to k;
    a side once shown stays shown."""
    x = np.asarray(differences, dtype=float)
    made = schedule.looks[: len(schedule.looks) if looks is None else looks]
    if kind not in (GREATER, NO_GAIN):
        raise ValueError(f"kind must be {GREATER!r} or {NO_GAIN!r}, got {kind!r}")
    at = np.asarray(made) - 1
    out = np.full((x.shape[0], len(made)), CONTINUE, dtype=object)
    if len(made) == 0:
        return out
    if schedule.test == TEST_BETTING or schedule.assume == NONE:
        betting_verdicts = shown(x[:, : made[-1]], kind, level, schedule.margin)[:, at]
    if schedule.test == TEST_BETTING:
        return betting_verdicts

    def by_look(values: np.ndarray, side: float) -> np.ndarray:
        """(R, looks): whether "values lean positive" is shown at ``side`` by each look."""
        crossing = signflip.first_crossing(values, made, schedule.max_seeds, side, schedule.spending)
        return crossing[:, None] <= np.arange(len(made))[None, :]

    margin = schedule.margin
    if kind == GREATER:
        if schedule.assume == SHIFT:
            out[by_look(x + margin, level) & by_look(margin - x, level)] = EQUIVALENT
        else:
            out[betting_verdicts == EQUIVALENT] = EQUIVALENT
        out[by_look(-x, level / 2.0)] = CONTRADICTED
        out[by_look(x, level / 2.0)] = HOLDS
    elif schedule.assume == SHIFT:
        out[by_look(x - margin, level)] = CONTRADICTED
        out[by_look(margin - x, level)] = HOLDS
    else:
        out[:] = betting_verdicts
    return out


def tost(differences: np.ndarray, level: float, schedule: Schedule) -> bool:
    """Whether the mean of ``differences`` ``(n,)`` is shown inside (-margin, +margin) by two one-sided
    tests at ``level`` with the schedule's test and assumption (what a "does not help" that holds adds:
    equivalent, or a worse)."""
    x = np.asarray(differences, dtype=float)[None, : schedule.max_seeds]
    if schedule.test == TEST_BETTING or schedule.assume == NONE:
        return bool(tost_equivalent(x, level, schedule.margin)[0, -1])
    looks = tuple(n for n in schedule.looks if n <= x.shape[1])
    if not looks:
        return False
    margin = schedule.margin
    up = signflip.shows_greater(x + margin, level, looks, schedule.max_seeds, schedule.spending)
    down = signflip.shows_greater(margin - x, level, looks, schedule.max_seeds, schedule.spending)
    return bool(up[0] & down[0])


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
    verdicts = per_look(differences[:, : schedule.max_seeds], kind, claim_level(schedule.alpha, parts), schedule)
    decided = verdicts != CONTINUE
    look = np.where(decided.any(axis=1), decided.argmax(axis=1), len(schedule.looks) - 1)
    rows = np.arange(len(look))
    return Stopped(look, verdicts[rows, look], np.asarray(schedule.looks)[look])


def run_fixed(
    differences: np.ndarray,
    alpha: float = basic.ALPHA,
    margin: float = basic.EQUIVALENCE_MARGIN,
    kind: str = GREATER,
    parts: int = 1,
    assume: str = DEFAULT_ASSUME,
    test: str = TEST,
) -> np.ndarray:
    """The decision on all n seeds at once (``(..., n)`` in, ``(...)`` out): the tests read once after
    the last seed (no stopping early)."""
    x = np.asarray(differences, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    schedule = Schedule((max(x.shape[-1], 2),), alpha, margin, test, assume)
    if x.shape[-1] < 2:
        return np.full(x.shape[:-1], CONTINUE, dtype=object)
    return per_look(flat, kind, claim_level(alpha, parts), schedule)[:, -1].reshape(x.shape[:-1])


def interval(differences: np.ndarray, alpha: float, schedule: Schedule | None = None) -> tuple[float, float]:
    """The two-sided 1 - ``alpha`` interval of a comparison after its last seed, by the test that
    decides it: the inverted sign-flip test (the shifts it keeps; with ``schedule``'s looks up to the
    seeds at hand), or by betting (``TEST_BETTING``: the means neither side rejects); (NaN, NaN)
    without seeds."""
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return math.nan, math.nan
    if schedule is not None and schedule.test == TEST_BETTING:
        return betting.interval(d, alpha)
    if schedule is None:
        return signflip.shift_interval(d, alpha)
    looks = tuple(n for n in schedule.looks if n <= d.size)
    if not looks:
        return -1.0, 1.0
    return signflip.shift_interval(d[: looks[-1]], alpha, looks, schedule.max_seeds, schedule.spending)


def mean_interval(differences: np.ndarray, alpha: float) -> tuple[float, float]:
    """The any-shape interval of the mean difference (``betting.interval``), for the line beside a verdict."""
    d = np.asarray(differences, dtype=float)
    return (math.nan, math.nan) if d.size == 0 else betting.interval(d, alpha)
