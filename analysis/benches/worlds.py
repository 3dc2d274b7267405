"""Simulated worlds for the sequential design's benchmark (``analysis.benches.sequential``) and its
tests: two arms compared seed by seed, each seed's final success a rate in [0, 1].

- ``Mixture``: learn or collapse. Per seed an arm learns (success ``learned``) with its own
  probability or collapses (``collapsed``, 0 included); ``shared`` is the chance that a seed draws
  one uniform number for both arms (a seed that makes one arm learn then tends to make the other
  learn too), else each arm draws its own. A gain is either a shift of every outcome of arm a or a
  higher chance to learn.
- ``Stable``: normal seed effects (``std`` per arm, ``shared`` share of the variance common to
  the two arms of a seed) around ``level``, plus a shift.
- ``Resampled``: seeds drawn with replacement from this testbed's logged finals
  (``analysis/data/testbed_finals.csv``); arm a draws from row ``better`` with probability
  ``weight``, else from ``row``, and arm b from ``row`` (a gain from a higher chance of the better
  row's outcomes); with ``shared`` the two arms of a seed draw the same logged seed.

Mixtures and stable worlds add task noise: a seed's success is the mean of ``TASKS`` binary
episodes at its rate (a collapsed run at 0 scores exactly 0). Resampled finals already carry theirs.
Every world knows its true mean difference (``difference``), so the benchmark can tell a false
decision from a true one.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np

TASKS = 128
MARGIN = 0.03
GAIN = 0.05
"""The true gains the worlds are built at: the margin (the edge of "does not help") and 5 points."""


@dataclass(frozen=True)
class Mixture:
    learn_b: float
    learn_a: float
    collapsed: float = 0.0
    learned: float = 0.9
    shared: float = 0.0
    shift: float = 0.0

    @property
    def name(self) -> str:
        gain = f", a learns {self.learn_a:g}" if self.learn_a != self.learn_b else ""
        gain += f", a shifted {100 * self.shift:+g} pts" if self.shift else ""
        return (
            f"learn {self.learn_b:g}{gain}; collapse at {100 * self.collapsed:g}, learned {100 * self.learned:g}; "
            f"shared {self.shared:g}"
        )

    @property
    def difference(self) -> float:
        return (self.learn_a - self.learn_b) * (self.learned - self.collapsed) + self.shift

    def rates(self, rng: np.random.Generator, replicates: int, seeds: int) -> tuple[np.ndarray, np.ndarray]:
        shape = (replicates, seeds)
        common = rng.random(shape)
        same = rng.random(shape) < self.shared
        draw_a = np.where(same, common, rng.random(shape))
        draw_b = np.where(same, common, rng.random(shape))
        a = np.where(draw_a < self.learn_a, self.learned, self.collapsed) + self.shift
        b = np.where(draw_b < self.learn_b, self.learned, self.collapsed)
        return a, b


@dataclass(frozen=True)
class Stable:
    level: float = 0.5
    std: float = 0.055
    shared: float = 0.5
    shift: float = 0.0

    @property
    def name(self) -> str:
        return f"stable, seed std {100 * self.std:g} pts, shared {self.shared:g}, a shifted {100 * self.shift:+g} pts"

    @property
    def difference(self) -> float:
        return self.shift

    def rates(self, rng: np.random.Generator, replicates: int, seeds: int) -> tuple[np.ndarray, np.ndarray]:
        shape = (replicates, seeds)
        common = rng.standard_normal(shape) * self.std * np.sqrt(self.shared)
        own = rng.standard_normal((2, *shape)) * self.std * np.sqrt(1.0 - self.shared)
        # 0.5 +- 9 std stays inside [0, 1]: the clip only guards the rates' domain.
        a = np.clip(self.level + common + own[0] + self.shift, 0.0, 1.0)
        b = np.clip(self.level + common + own[1], 0.0, 1.0)
        return a, b


@functools.cache
def finals_file(name: str) -> dict[str, np.ndarray]:
    """Per row of a finals file shipped under ``analysis/`` (columns row, seed, final; seeds in order),
    the final success of its seeds."""
    text = resources.files("analysis").joinpath(name).read_text()
    rows: dict[str, list[float]] = {}
    for record in csv.DictReader(text.splitlines()):
        rows.setdefault(record["row"], []).append(float(record["final"]))
    return {row: np.array(values) for row, values in rows.items()}


def testbed_finals() -> dict[str, np.ndarray]:
    """The logged final success per seed of each row (``analysis/data/testbed_finals.csv``)."""
    return finals_file("data/testbed_finals.csv")


@dataclass(frozen=True)
class Resampled:
    row: str
    better: str | None = None
    weight: float = 0.0
    shared: float = 0.0

    @property
    def name(self) -> str:
        gain = f", a from {self.better} w.p. {self.weight:.3f}" if self.better else ""
        return f"testbed {self.row}{gain}; shared {self.shared:g}"

    @property
    def difference(self) -> float:
        finals = testbed_finals()
        return 0.0 if self.better is None else self.weight * float(finals[self.better].mean() - finals[self.row].mean())

    @classmethod
    def with_gain(cls, row: str, better: str, gain: float, shared: float = 0.0) -> Resampled:
        """The world whose true gain is ``gain``: the weight that makes it so."""
        finals = testbed_finals()
        return cls(row, better, gain / float(finals[better].mean() - finals[row].mean()), shared)

    def rates(self, rng: np.random.Generator, replicates: int, seeds: int) -> tuple[np.ndarray, np.ndarray]:
        finals = testbed_finals()
        base = finals[self.row]
        shape = (replicates, seeds)
        seed_b = rng.integers(0, base.size, shape)
        seed_a = np.where(rng.random(shape) < self.shared, seed_b, rng.integers(0, base.size, shape))
        a = base[seed_a]
        if self.better is not None:
            better = finals[self.better]
            a = np.where(rng.random(shape) < self.weight, better[rng.integers(0, better.size, shape)], a)
        return a, base[seed_b]


World = Mixture | Stable | Resampled


def simulate(rng: np.random.Generator, world: World, replicates: int, seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed paired differences a - b in [-1, 1], and the task-level variance of each (binary
    episodes over ``TASKS`` at the observed rates; only the t candidates read it), each
    ``(replicates, seeds)``."""
    a, b = world.rates(rng, replicates, seeds)
    if not isinstance(world, Resampled):
        a = rng.binomial(TASKS, np.clip(a, 0.0, 1.0)) / TASKS
        b = rng.binomial(TASKS, b) / TASKS
    return a - b, (a * (1 - a) + b * (1 - b)) / TASKS


LEARN = (0.03, 0.1, 0.3, 0.5)
COLLAPSED = (0.0, 0.1)
SHARED = (0.0, 0.5)
TESTBED_ROWS = ("lambda0=0", "lambda0=0.5", "entropy", "random")
TESTBED_BETTER = {"lambda0=0": "lambda0=0.5", "random": "lambda0=0.5"}
"""The logged rows resampled, and for a gain, which better row arm a draws from."""


def worlds(difference: float) -> list[World]:
    """The grid of worlds whose true difference is ``difference`` (0, or a gain): learn-or-collapse
    mixtures over ``LEARN`` x ``COLLAPSED`` x ``SHARED`` (a gain both as a shift and as a higher
    chance to learn), the stable regime, and the testbed's rows resampled."""
    grid: list[World] = []
    for learn in LEARN:
        for collapsed in COLLAPSED:
            for shared in SHARED:
                if difference == 0:
                    grid.append(Mixture(learn, learn, collapsed, shared=shared))
                    continue
                grid.append(Mixture(learn, learn, collapsed, shared=shared, shift=difference))
                grid.append(Mixture(learn, learn + difference / (0.9 - collapsed), collapsed, shared=shared))
    grid.append(Stable(shift=difference))
    for row in TESTBED_ROWS:
        for shared in SHARED:
            if difference == 0:
                grid.append(Resampled(row, shared=shared))
            elif row in TESTBED_BETTER:
                grid.append(Resampled.with_gain(row, TESTBED_BETTER[row], difference, shared))
    return grid


STABLE = Stable()
LEARN_OR_COLLAPSE = Mixture(0.5, 0.5, 0.1, 0.8, shared=0.5)
"""The two regimes the power table states: normal seed effects of 5.5 points (the 5-6 measured
among well-formed commands) and learn or collapse half the time (pooled seed std 35 points, the
30-37 measured under free decoding)."""
