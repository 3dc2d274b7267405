"""Exact sign-flip randomization tests of paired differences (Fisher 1935; Pitman 1937), at a fixed
seed count and group-sequentially at planned looks.

The null is Fisher's sharp null that the estimator makes no difference: the two runs of a seed share
their start, tasks and draws, so under it they are exchangeable and each per-seed difference a - b is
as likely to carry either sign, whatever shape the outcomes have (learn-or-collapse included).
Conditional on the magnitudes |d_1| .. |d_n| the 2^n sign patterns are then equally likely, and the
probability that the sum of the differences reaches the observed sum is known exactly: a test that
rejects when that probability is at most a has level a at any seed count, without a model of the
outcomes. What a rejection says: the runs of a and b differ, in the direction of the sum. Reading it as
a gain in the *mean* assumes a shift (a's per-seed outcome is b's moved by a constant, up to symmetric
noise); two arms of different shape with equal means (one learns or collapses, the other sits at the
same average) are rejected in either direction more often than a.

The statistic is the sum of the differences (the paired permutation test of the mean). Sign patterns
are enumerated exactly up to ``EXACT_LIMIT`` seeds (2^20 patterns); above it ``MONTE_CARLO`` patterns
are drawn with a fixed seed, the observed one counted among them (still a valid test, slightly
conservative). No exact test can reach a below 2^-n: with n seeds a side at level a can be shown only
when 2^-n <= a (``reachable``).

**Group-sequential.** At planned looks n_1 < ... < n_K a one-sided test spends its level a by a
spending function a(t) of the information fraction t_k = n_k / n_K (Lan and DeMets 1983; O'Brien-Fleming
type by default). At look k the boundary c_k is the smallest value such that, conditional on the
magnitudes seen so far, the sign patterns that did not cross at an earlier look and reach c_k at look k
have probability at most a(t_k) minus what the earlier looks spent. Every boundary is a function of the
magnitudes seen by its look, and the chance of a first crossing at look k given all magnitudes up to n_k
is at most its increment, so the chance of ever crossing is at most a(1) = a under the sharp null,
exactly, at any seed count (the permutation version of a group-sequential test; e.g. Mehta et al. 1994,
"Exact stratified linear rank tests for ordered categorical and binary data" for the conditional
construction). A look with a single fixed look and a(1) = a is the fixed-n test.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import scipy.stats

EXACT_LIMIT = 20
"""Up to this many seeds every sign pattern is enumerated; above, ``MONTE_CARLO`` are drawn."""
MONTE_CARLO = 20_000
"""Sign patterns drawn above ``EXACT_LIMIT`` seeds (seeded: the same test every time)."""
MONTE_CARLO_SEED = 20261207
TIE = 1e-9
"""Sums closer than this are equal (the same multiset of magnitudes summed in another order)."""
CHUNK_ELEMENTS = 1 << 23
"""Replicates are processed in chunks of about this many (replicate, pattern) values (64 MB)."""


def obrien_fleming(fraction: np.ndarray, level: float) -> np.ndarray:
    """Lan-DeMets O'Brien-Fleming-type spending of a one-sided ``level``: 2 - 2 Phi(z_{1 - level/2} /
    sqrt(t)); equals ``level`` at t = 1 and spends almost nothing early."""
    t = np.asarray(fraction, dtype=float)
    with np.errstate(divide="ignore"):
        spent = 2.0 - 2.0 * scipy.stats.norm.cdf(scipy.stats.norm.ppf(1.0 - level / 2.0) / np.sqrt(t))
    return np.where(t > 0, spent, 0.0)


def pocock(fraction: np.ndarray, level: float) -> np.ndarray:
    """Lan-DeMets Pocock-type spending: level ln(1 + (e - 1) t)."""
    return level * np.log1p((math.e - 1.0) * np.asarray(fraction, dtype=float))


SPENDING: Mapping[str, Callable[[np.ndarray, float], np.ndarray]] = {"obf": obrien_fleming, "pocock": pocock}
DEFAULT_SPENDING = "obf"


def check_spending(name: str) -> None:
    if name not in SPENDING:
        raise ValueError(f"spending must be one of {', '.join(sorted(SPENDING))}, got {name!r}")


def reachable(seeds: int, level: float) -> bool:
    """Whether an exact sign-flip test on ``seeds`` seeds can show one side at ``level``: its smallest
    p-value, one pattern of 2^seeds, must not exceed it."""
    return seeds >= 1 and 2.0**-seeds <= level


def fewest_seeds(level: float) -> int:
    """The fewest seeds at which one side can be shown at ``level`` (6 at 2.5%, 8 at 0.5%)."""
    return max(1, math.ceil(-math.log2(level) - 1e-12))


@functools.lru_cache(maxsize=4)
def patterns(seeds: int) -> np.ndarray:
    """``(M, seeds)`` sign patterns in {-1, +1}: all 2^seeds (row r's column c is - where bit c of r is
    set, so the first 2^k rows hold every pattern of the first k columns) up to ``EXACT_LIMIT``, else
    ``MONTE_CARLO`` drawn with a fixed seed after the all-plus pattern (the observed one's stand-in)."""
    if seeds <= EXACT_LIMIT:
        rows = np.arange(2**seeds, dtype=np.int64)[:, None]
        bits = (rows >> np.arange(seeds, dtype=np.int64)[None, :]) & 1
        return (1 - 2 * bits).astype(np.float64)
    drawn = np.random.default_rng(MONTE_CARLO_SEED).integers(0, 2, size=(MONTE_CARLO, seeds))
    return np.vstack([np.ones((1, seeds)), 1.0 - 2.0 * drawn])


def p_greater(differences: np.ndarray) -> np.ndarray:
    """One-sided p-value of "the differences lean positive" under the sharp null: the share of sign
    patterns of the magnitudes whose sum is at least the observed sum. ``(..., n)`` in, ``(...)`` out;
    NaN without seeds."""
    x = np.asarray(differences, dtype=float)
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], np.nan)
    flat = x.reshape(-1, x.shape[-1])
    signs = patterns(x.shape[-1])
    out = np.empty(flat.shape[0])
    step = max(1, CHUNK_ELEMENTS // signs.shape[0])
    for start in range(0, flat.shape[0], step):
        block = flat[start : start + step]
        sums = np.abs(block) @ signs.T
        observed = block.sum(axis=1, keepdims=True)
        out[start : start + step] = np.mean(sums >= observed - TIE, axis=1)
    return out.reshape(x.shape[:-1])


def first_crossing(
    differences: np.ndarray,
    looks: Sequence[int],
    max_seeds: int,
    level: float,
    spending: str = DEFAULT_SPENDING,
) -> np.ndarray:
    """The look (index into ``looks``) at which the one-sided group-sequential test first shows "the
    differences lean positive" at ``level``, or ``len(looks)`` if none does.

    ``differences`` ``(R, n)`` with n >= ``looks[-1]`` (seeds in order; seeds past the last look are
    not read); ``looks`` the seed counts looked at so far, a prefix of the design's, whose last planned
    look has ``max_seeds`` (the information fraction of look k is looks[k] / max_seeds). One look at
    ``max_seeds`` is the fixed-n test."""
    check_spending(spending)
    x = np.asarray(differences, dtype=float)
    if x.ndim != 2 or len(looks) == 0 or x.shape[1] < looks[-1]:
        raise ValueError(f"need (replicates, >= {looks[-1] if looks else 0} seeds) differences, got {x.shape}")
    cumulative = SPENDING[spending](np.asarray(looks, dtype=float) / float(max_seeds), level)
    largest = int(looks[-1])
    out = np.full(x.shape[0], len(looks), dtype=np.int64)
    step = max(1, CHUNK_ELEMENTS // patterns(largest).shape[0])
    for start in range(0, x.shape[0], step):
        out[start : start + step] = _crossings(x[start : start + step, :largest], looks, cumulative, largest)
    return out


def _crossings(x: np.ndarray, looks: Sequence[int], cumulative: np.ndarray, largest: int) -> np.ndarray:
    """``first_crossing`` on one chunk. Exact patterns are built look by look: the 2^n_k patterns of look
    k are those of look k - 1 (the low bits) with the signs of the seeds it adds (the high bits), so the
    sums and the patterns still alive carry over by broadcasting instead of being recomputed. The
    observed pattern crosses at look k when the alive patterns at least as extreme are within the
    look's budget; the boundary itself is needed only for the looks after it."""
    replicates = x.shape[0]
    magnitudes = np.abs(x)
    exact = largest <= EXACT_LIMIT
    first = np.full(replicates, len(looks), dtype=np.int64)
    spent = np.zeros(replicates)
    sums = np.zeros((replicates, 1))
    alive = np.ones((replicates, 1), dtype=bool)
    before = 0
    for k, seeds in enumerate(looks):
        if exact:
            increment = magnitudes[:, before:seeds] @ patterns(seeds - before).T
            sums = (sums[:, None, :] + increment[:, :, None]).reshape(replicates, -1)
            alive = np.repeat(alive[:, None, :], increment.shape[1], axis=1).reshape(replicates, -1)
        else:
            sums = magnitudes[:, :seeds] @ patterns(largest)[:, :seeds].T
            alive = np.broadcast_to(alive, sums.shape) if alive.shape[1] == 1 else alive
        total = sums.shape[1]
        allowed = np.floor((cumulative[k] - spent) * total + 1e-9).astype(np.int64)
        observed = x[:, :seeds].sum(axis=1)
        at_least = np.sum(alive & (sums >= observed[:, None] - TIE), axis=1)
        crossed = (allowed > 0) & (at_least <= allowed) & (first == len(looks))
        first[crossed] = k
        if k < len(looks) - 1:
            beyond = _beyond(np.where(alive, sums, -np.inf), allowed)
            rejected = alive & (sums > beyond[:, None] + TIE)
            spent = spent + rejected.sum(axis=1) / total
            alive = alive & ~rejected
        before = seeds
    return first


def _beyond(values: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per row, the (allowed + 1)-th largest of ``values`` (+inf where nothing is allowed): the
    boundary's tail is every value above it, at most ``allowed`` patterns, ties all in or all out."""
    out = np.full(values.shape[0], np.inf)
    for count in np.unique(allowed):
        if count <= 0:
            continue
        rows = allowed == count
        if count >= values.shape[1]:
            out[rows] = -np.inf
            continue
        out[rows] = -np.partition(-values[rows], int(count), axis=1)[:, int(count)]
    return out


def shows_greater(
    differences: np.ndarray,
    level: float,
    looks: Sequence[int] | None = None,
    max_seeds: int | None = None,
    spending: str = DEFAULT_SPENDING,
) -> np.ndarray:
    """Per replicate of ``differences`` ``(R, n)``, whether "leans positive" is shown at ``level`` by
    the last of ``looks`` (default: one look at n, the fixed-n test)."""
    x = np.asarray(differences, dtype=float)
    looks = (x.shape[1],) if looks is None else tuple(looks)
    crossing = first_crossing(x, looks, looks[-1] if max_seeds is None else max_seeds, level, spending)
    return crossing < len(looks)


SHIFT_GRID = 201
"""Shifts tried between the smallest and the largest difference, before refining each end."""


def shift_interval(
    differences: np.ndarray,
    level: float,
    looks: Sequence[int] | None = None,
    max_seeds: int | None = None,
    spending: str = DEFAULT_SPENDING,
) -> tuple[float, float]:
    """The two-sided 1 - ``level`` interval for a shift theta (a - b = theta + symmetric noise): the
    shifts that neither side's test of d - theta (each at ``level`` / 2, with the design's looks)
    rejects, read on a grid between the extreme differences and refined at each end (the hull of the
    kept shifts). [-1, 1] when no side can be shown (``reachable``); (NaN, NaN) without seeds."""
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return math.nan, math.nan
    if not reachable(d.size, level / 2.0):
        return -1.0, 1.0

    def kept(shifts: np.ndarray) -> np.ndarray:
        shifted = d[None, :] - shifts[:, None]
        up = shows_greater(shifted, level / 2.0, looks, max_seeds, spending)
        down = shows_greater(-shifted, level / 2.0, looks, max_seeds, spending)
        return ~(up | down)

    low, high = float(d.min()), float(d.max())
    span = max(high - low, 1e-6)
    grid = np.linspace(low - span / (SHIFT_GRID - 1), high + span / (SHIFT_GRID - 1), SHIFT_GRID)
    inside = kept(grid)
    if not inside.any():  # cannot happen: the mean of d is never rejected on both sides
        return math.nan, math.nan
    first, last = int(np.argmax(inside)), len(grid) - 1 - int(np.argmax(inside[::-1]))
    lower = _refine(kept, grid[first - 1], grid[first]) if first > 0 else -1.0
    upper = _refine(kept, grid[last + 1], grid[last]) if last < len(grid) - 1 else 1.0
    return max(-1.0, lower), min(1.0, upper)


def _refine(kept: Callable[[np.ndarray], np.ndarray], outside: float, inside: float) -> float:
    """The kept end between a rejected shift ``outside`` and a kept one ``inside``, to 1/50 of their gap."""
    fine = np.linspace(outside, inside, 51)
    flags = kept(fine)
    return float(fine[int(np.argmax(flags))])


def improvement(differences: np.ndarray, level: float) -> tuple[float, float, float]:
    """The probability of improvement over paired seeds, P(a > b) + P(a = b) / 2 estimated by (wins +
    ties / 2) / n, with an exact interval at 1 - ``level``: Clopper-Pearson's lower bound for P(a > b)
    from the wins and upper bound for P(a >= b) from wins and ties, each at ``level`` / 2 (the sign
    test's interval; with no ties, exactly Clopper-Pearson's). NaNs without seeds."""
    d = np.asarray(differences, dtype=float)
    n = d.size
    if n == 0:
        return math.nan, math.nan, math.nan
    wins, ties = int(np.sum(d > TIE)), int(np.sum(np.abs(d) <= TIE))
    low = 0.0 if wins == 0 else float(scipy.stats.beta.ppf(level / 2.0, wins, n - wins + 1))
    at_least = wins + ties
    high = 1.0 if at_least == n else float(scipy.stats.beta.ppf(1.0 - level / 2.0, at_least + 1, n - at_least))
    return (wins + ties / 2.0) / n, low, high
