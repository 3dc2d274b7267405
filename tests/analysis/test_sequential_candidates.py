"""The candidates of the benchmark: the previous design's boundaries against published values, and
the default's false decisions on a fixed subset of worlds (the whole grid is marked slow)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from analysis.benches import candidates, sequential
from analysis.benches import worlds as simulated
from analysis.benches.worlds import GAIN, MARGIN, Mixture, Resampled, Stable, World, worlds
from analysis.stats.sequential import NO_GAIN, Schedule


@pytest.mark.parametrize("name", sorted(candidates.SPENDING))
def test_spending_functions_spend_nothing_at_zero_and_alpha_at_one(name):
    function = candidates.SPENDING[name]
    t = np.linspace(0, 1, 11)
    spent = function(t, 0.05)
    assert spent[0] == 0 and spent[-1] == pytest.approx(0.05)
    assert np.all(np.diff(spent) > 0)


def test_pocock_type_boundaries_match_the_published_ones():
    # Lan-DeMets Pocock-type, 5 equally spaced looks, two-sided 0.05 (Jennison and Turnbull, Table 7.6).
    c = candidates.boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, "pocock")
    assert c == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)


def test_obrien_fleming_type_first_look_and_one_look():
    # The first look's boundary is z_{0.975} / sqrt(t_1) by the spending function's definition;
    # a single look is the fixed-n test.
    c = candidates.boundaries([0.25, 0.5, 1.0], 0.05, "obf")
    assert c[0] == pytest.approx(scipy.stats.norm.ppf(0.975) / 0.5, rel=1e-6)
    assert candidates.boundaries([1.0])[0] == pytest.approx(1.959964, abs=1e-5)
    assert c[0] > c[1] > c[2] > 1.96


@pytest.mark.parametrize("name", sorted(candidates.SPENDING))
def test_boundaries_spend_what_the_function_says_on_brownian_paths(name):
    rng = np.random.default_rng(4)
    fractions = np.array([0.3, 0.6, 0.8, 1.0])
    c = candidates.boundaries(fractions, 0.05, name)
    steps = rng.standard_normal((400_000, fractions.size)) * np.sqrt(np.diff(np.r_[0.0, fractions]))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = np.abs(z) >= c
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    exits = np.array([np.mean(first == k) for k in range(fractions.size)])
    expected = np.diff(np.r_[0.0, candidates.SPENDING[name](fractions, 0.05)])
    assert np.all(np.abs(exits - expected) <= 4 * np.sqrt(expected / 400_000) + 1e-5), (exits, expected)


SUBSET: tuple[World, ...] = (
    Mixture(0.03, 0.03 + GAIN / 0.9, shared=0.5),  # a gain from a higher chance to learn: broke the t design
    Mixture(0.5, 0.5, shared=0.0),
    Mixture(0.3, 0.3, shift=MARGIN),
    Resampled.with_gain("random", "lambda0=0.5", MARGIN),
    Stable(shift=MARGIN),
)
REPLICATES = 4000


def limit(alpha: float) -> float:
    """alpha plus three standard errors of a rate over ``REPLICATES`` experiments."""
    return alpha + 3 * np.sqrt(alpha * (1 - alpha) / REPLICATES)


def check(worlds_: tuple[World, ...] | list[World], replicates: int) -> None:
    schedule = Schedule.rounds(15)
    for number, world in enumerate(worlds_):
        differences, variances = sequential.draws(world, replicates, 15, number)
        for kind, verdicts in sequential.PER_WORLD_COLUMNS:
            decision = sequential.CANDIDATES[sequential.DEFAULT](differences, variances, schedule, kind)
            rate = sequential.column_rate(decision, kind, verdicts, world.difference, schedule.margin)
            if rate is not None:
                assert rate <= limit(schedule.alpha), (world.name, kind, verdicts, rate)


def test_the_default_keeps_every_verdicts_level_on_a_fixed_subset():
    check(SUBSET, REPLICATES)


def test_the_previous_t_design_breaks_where_the_issue_found_it():
    # Learn probability 3% against 8.6%, collapse at 0: seeds that all collapse give zero-width intervals.
    schedule = Schedule.rounds(15)
    world = SUBSET[0]
    differences, variances = sequential.draws(world, 2000, 15, 0)
    decision = candidates.t_fixed(differences, variances, schedule, NO_GAIN)
    assert sequential.false_decisions(decision, NO_GAIN, world.difference, schedule.margin) > 0.2


@pytest.mark.slow
def test_the_default_keeps_every_verdicts_level_on_the_whole_grid():
    check([world for difference in sequential.GRID_DIFFERENCES for world in worlds(difference)], 2000)


def test_the_grid_has_the_worlds_it_promises():
    gains = worlds(GAIN)
    assert all(world.difference == pytest.approx(GAIN) for world in gains)
    assert any(isinstance(w, Mixture) and w.collapsed == 0 and w.learn_a != w.learn_b for w in gains)
    assert any(isinstance(w, Resampled) for w in worlds(0.0))
    assert set(simulated.testbed_finals()) >= {"lambda0=0", "lambda0=0.5", "entropy", "random"}
    assert simulated.testbed_finals()["lambda0=0"].size == 10


def test_the_testbed_comparisons_stay_undecided_at_six_seeds():
    # lambda0 0.5 − 0 over seeds 0-5: (56.2 + 82.8 + 82.2 + 61.5 + 6.8 + 42.4) / 6 = +55.32 points, two
    # seeds far below the rest: the t design held it at this look; a test valid for any shape does not.
    rows = sequential.testbed_looks(Schedule.rounds(15))
    assert rows[2][2].startswith("+55.32 pts")
    assert all(cell.endswith(": continue") for row in rows for cell in row[1:])
