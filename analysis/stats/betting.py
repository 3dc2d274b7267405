"""One-sided tests of a bounded mean by betting (Waudby-Smith and Ramdas 2023, "Estimating means
of bounded random variables by betting", JRSS B 86(1), arXiv:2010.09686): valid at every seed
count at once, for outcomes of any shape inside known bounds.

The outcomes here are paired differences of two success rates, so they lie in [-1, 1]; they are
rescaled to y in [0, 1] and a null mean m to m' = (m + 1) / 2. A bettor who starts with capital 1
and, before seed i, stakes lambda_i (chosen from seeds 1 .. i - 1 only) on the mean exceeding m'
holds after t seeds

    K+_t(m) = prod_{i <= t} (1 + lambda+_i (y_i - m')),   lambda+_i = min(lambda_i, c / m')

(the paper's capital process, eq. 13, with the hedge's truncation of Section 4.2), and one who bets
on the mean falling short of it K-_t(m) = prod (1 - lambda-_i (y_i - m')), lambda-_i = min(lambda_i,
c / (1 - m')). Under a true mean at most m' each factor of K+ has expectation at most 1 and is
positive, so K+ is a nonnegative supermartingale and, by Ville's inequality, ever reaches 1 / a
with probability at most a: "the mean exceeds m" is decided at level a once K+ >= 1 / a, at
whichever seed count one looks, as often as one looks (Theorem 3). Nothing is assumed about the
outcomes' shape beyond the bounds: learn-or-collapse mixtures, point masses at 0 and seeds that
agree exactly are covered (identical outcomes grow no capital; they never decide).

The stakes are the paper's predictable plug-in (eq. 26-27): lambda_i = sqrt(2 log(1 / a) /
(sigma2_{i-1} h_i)) with the running variance sigma2_{i-1} (started at 1/4) and h_i = i log(1 + i)
(``horizon`` None: stakes for every seed count alike, the confidence sequence), or h_i = n (stakes
tuned to ``horizon`` = n seeds, the paper's fixed-n "betting CI"; still valid at every seed count,
most powerful near n).

Why not ``confseq`` or ``expectation`` (both on PyPI): the design's simulations need the capital of
tens of thousands of simulated experiments at once, a few numpy products; the packages compute one
sequence per call.
"""

from __future__ import annotations

import math

import numpy as np

LOW, HIGH = -1.0, 1.0
"""The bounds of a paired difference of two success rates."""
TRUNCATION = 1.0
"""c of the paper: the stake is capped at c / m' (c / (1 - m') against), so that a factor of the
capital is never negative. The paper suggests 1/2 or 3/4 for its confidence sequences, which keep
the capital positive; a one-sided test only needs it nonnegative, and c = 1 (a seed at the far
bound may take all the capital) is the most powerful with few seeds (docs/sequential.md)."""


def _rescale(values: np.ndarray | float) -> np.ndarray:
    return (np.asarray(values, dtype=float) - LOW) / (HIGH - LOW)


def stakes(differences: np.ndarray, level: float, horizon: int | None = None) -> np.ndarray:
    """The predictable plug-in stake before each seed, from the seeds before it: ``differences``
    ``(..., n)`` in [LOW, HIGH], same shape out."""
    y = _rescale(differences)
    seen = np.arange(1, y.shape[-1] + 1)
    running_mean = (0.5 + np.cumsum(y, axis=-1)) / (seen + 1)
    running_variance = (0.25 + np.cumsum((y - running_mean) ** 2, axis=-1)) / (seen + 1)
    previous = np.concatenate([np.full((*y.shape[:-1], 1), 0.25), running_variance[..., :-1]], axis=-1)
    spread = seen * np.log1p(seen) if horizon is None else float(horizon)
    return np.sqrt(2.0 * math.log(1.0 / level) / (previous * spread))


def capital(
    differences: np.ndarray, null: float, level: float, horizon: int | None = None, truncation: float = TRUNCATION
) -> tuple[np.ndarray, np.ndarray]:
    """(K+, K-) after each seed against a null mean ``null`` in (LOW, HIGH), betting at ``level``:
    K+ bets on a mean above ``null``, K- below; each ``(..., n)`` like ``differences``."""
    if not LOW < null < HIGH:
        raise ValueError(f"the null mean must lie inside ({LOW:g}, {HIGH:g}), got {null}")
    y = _rescale(differences)
    m = float(_rescale(null))
    stake = stakes(differences, level, horizon)
    up = np.cumprod(1.0 + np.minimum(stake, truncation / m) * (y - m), axis=-1)
    down = np.cumprod(1.0 - np.minimum(stake, truncation / (1.0 - m)) * (y - m), axis=-1)
    return up, down


def exceeds(
    differences: np.ndarray, null: float, level: float, horizon: int | None = None, truncation: float = TRUNCATION
) -> np.ndarray:
    """Per seed count, whether "the mean exceeds ``null``" is shown at ``level`` (K+ >= 1 / level)."""
    return capital(differences, null, level, horizon, truncation)[0] >= 1.0 / level


def falls_short(
    differences: np.ndarray, null: float, level: float, horizon: int | None = None, truncation: float = TRUNCATION
) -> np.ndarray:
    """Per seed count, whether "the mean is below ``null``" is shown at ``level`` (K- >= 1 / level)."""
    return capital(differences, null, level, horizon, truncation)[1] >= 1.0 / level


NULL_GRID = np.linspace(LOW, HIGH, 801)[1:-1]
"""Null means an interval is read on (0.25-point steps)."""


def interval(differences: np.ndarray, level: float, horizon: int | None = None) -> tuple[float, float]:
    """The two-sided 1 - ``level`` confidence interval for the mean of ``differences`` ``(n,)`` after
    its last seed: the null means neither side's test (each at ``level`` / 2) rejects, read on
    ``NULL_GRID`` and widened outward by one step; (NaN, NaN) without seeds."""
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    threshold = 2.0 / level
    kept = [
        null
        for null in NULL_GRID
        if max(part[-1] for part in capital(values, float(null), level / 2.0, horizon)) < threshold
    ]
    step = NULL_GRID[1] - NULL_GRID[0]
    if not kept:  # cannot happen for values in bounds: the sample mean is never rejected on both sides
        return math.nan, math.nan
    return max(LOW, kept[0] - step), min(HIGH, kept[-1] + step)
