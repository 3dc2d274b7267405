"""The group-sequential design on hand-checkable cases: spending, boundaries, decisions, schedules."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from analysis import sequential, stats
from analysis.sequential import CONTINUE, CONTRADICTED, EQUIVALENT, GREATER, HOLDS, NO_GAIN, Schedule


@pytest.mark.parametrize("name", sorted(sequential.SPENDING))
def test_spending_functions_spend_nothing_at_zero_and_alpha_at_one(name):
    function = sequential.SPENDING[name]
    t = np.linspace(0, 1, 11)
    spent = function(t, 0.05)
    assert spent[0] == 0 and spent[-1] == pytest.approx(0.05)
    assert np.all(np.diff(spent) > 0)


def test_pocock_type_boundaries_match_the_published_ones():
    # Lan-DeMets Pocock-type, 5 equally spaced looks, two-sided 0.05 (Jennison and Turnbull, Table 7.6).
    c = sequential.boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, "pocock")
    assert c == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)


def test_obrien_fleming_type_first_look_and_one_look():
    # The first look's boundary is z_{0.975} / sqrt(t_1) by the spending function's definition;
    # a single look is the fixed-n test.
    c = sequential.boundaries([0.25, 0.5, 1.0], 0.05, "obf")
    assert c[0] == pytest.approx(scipy.stats.norm.ppf(0.975) / 0.5, rel=1e-6)
    assert sequential.boundaries([1.0])[0] == pytest.approx(1.959964, abs=1e-5)
    assert c[0] > c[1] > c[2] > 1.96


@pytest.mark.parametrize("name", sorted(sequential.SPENDING))
def test_boundaries_spend_what_the_function_says_on_brownian_paths(name):
    rng = np.random.default_rng(4)
    fractions = np.array([0.3, 0.6, 0.8, 1.0])
    c = sequential.boundaries(fractions, 0.05, name)
    steps = rng.standard_normal((400_000, fractions.size)) * np.sqrt(np.diff(np.r_[0.0, fractions]))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = np.abs(z) >= c
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    exits = np.array([np.mean(first == k) for k in range(fractions.size)])
    expected = np.diff(np.r_[0.0, sequential.SPENDING[name](fractions, 0.05)])
    assert np.all(np.abs(exits - expected) <= 4 * np.sqrt(expected / 400_000) + 1e-5), (exits, expected)


def test_rounds_and_their_errors():
    assert Schedule.rounds(15).looks == (3, 6, 9, 12, 15)
    assert Schedule.rounds(10, 3, 2).looks == (3, 5, 7, 9, 10)
    with pytest.raises(ValueError, match="--max-seeds must be at least the first round's 3 seeds, got 2"):
        Schedule.rounds(2)
    with pytest.raises(ValueError, match="margin must be >= 0"):
        Schedule.rounds(9, margin=-0.01)
    with pytest.raises(ValueError, match="spending must be one of"):
        Schedule.rounds(9, spending="linear")


def test_a_look_before_min_deciding_spends_nothing_and_the_tag_round_trips():
    schedule = Schedule.rounds(15)
    c = schedule.boundaries()
    assert c[0] == sequential.BOUNDARY_CAP
    assert c[1:] == pytest.approx(sequential.boundaries([0.4, 0.6, 0.8, 1.0]))
    assert schedule.levels()[0] == 0.0
    assert schedule.spent(5) == pytest.approx(0.05)
    calibrated = schedule.calibrated()
    assert 0 < calibrated.spend <= 0.05
    assert Schedule.from_tag(calibrated.tag()) == calibrated
    with pytest.raises(ValueError, match="not a sequential design tag"):
        Schedule.from_tag("looks=3,6")


def test_decisions():
    low = np.array([0.01, -0.05, -0.02, -0.05, -0.01])
    high = np.array([0.04, -0.01, 0.02, 0.05, 0.05])
    assert list(sequential.decide(low, high, GREATER, 0.03)) == [HOLDS, CONTRADICTED, EQUIVALENT, CONTINUE, CONTINUE]
    assert list(sequential.decide(low, high, NO_GAIN, 0.03)) == [CONTINUE, HOLDS, HOLDS, CONTINUE, CONTINUE]
    assert list(sequential.decide(np.array([0.04]), np.array([0.09]), NO_GAIN, 0.03)) == [CONTRADICTED]


def test_the_vectorised_half_width_is_the_comparisons():
    levels = (stats.Level(0.004), stats.Level(0.0009, 127.0, 0.0))
    for seeds, level in ((6, 0.002), (15, 0.04)):
        vector = sequential.half_widths(np.array([0.004]), np.array([0.0009]), seeds, 128, level)[0]
        assert vector == pytest.approx(sequential.rci_half_width(levels, seeds, level))


def test_the_procedure_stops_at_its_first_decision():
    schedule = Schedule((3, 6, 9), min_deciding=3)
    differences = np.array(
        [[0.5, 0.6, 0.4, 0.5, 0.55, 0.45, 0.5, 0.5, 0.5], [0.0, 0.1, -0.1, 0.05, -0.05, 0.0, 0.1, -0.1, 0.0]]
    )
    run = sequential.run_sequential(differences, np.full((2, 9), 1e-4), 128, schedule)
    assert list(run.decision) == [HOLDS, CONTINUE]
    assert list(run.seeds) == [6, 9]  # at 3 seeds the t quantile (2 df) at the first look's level is 37


def test_the_rows_a_claim_compares_are_known_before_any_run():
    from analysis.blocks import get_block
    from analysis.cells import Plan
    from analysis.sequential_claims import block_claim_names, rows_compared

    def rows(block_name: str, claim: str) -> set[str]:
        block = get_block(block_name)
        plan = Plan((block,), env="errand", scale="tiny")
        env, scale = plan.settings(block)[0]
        names = {plan.cell(variant, env, scale): variant.name for variant in block.variants}
        return rows_compared(plan, [block_claim_names(block_name)[claim]], names)

    # Concavity compares the middle point with both ends: the first round needs 3 of the 6 rows.
    assert rows("lambda0", "lambda0 sweep concave") == {"lambda0=0", "lambda0=0.5", "lambda0=1"}
    assert rows("lambda0", "no fixed lambda0 matches") == {v.name for v in get_block("lambda0").variants}
    assert rows("detector", "detector order") == {"random", "uniform", "entropy"}
