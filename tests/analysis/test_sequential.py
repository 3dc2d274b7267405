"""The sequential design on hand-checkable cases: schedules, tags, decisions, stopping."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.stats import sequential
from analysis.stats.sequential import CONTINUE, CONTRADICTED, EQUIVALENT, GREATER, HOLDS, NO_GAIN, NONE, Schedule


def test_rounds_and_their_errors():
    assert Schedule.rounds(15).looks == (3, 6, 9, 12, 15)
    assert Schedule.rounds(10, 3, 2).looks == (3, 5, 7, 9, 10)
    with pytest.raises(ValueError, match="--max-seeds must be at least the first round's 3 seeds, got 2"):
        Schedule.rounds(2)
    with pytest.raises(ValueError, match=r"margin must be in \[0, 1\)"):
        Schedule.rounds(9, margin=-0.01)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 0.5\), got 0.5"):
        Schedule.rounds(9, alpha=0.5)


def test_the_tag_round_trips_and_a_design_of_another_test_is_refused():
    schedule = Schedule.rounds(9, alpha=0.1, margin=0.02)
    assert Schedule.from_tag(schedule.tag()) == schedule
    with pytest.raises(ValueError, match="not a sequential design tag of this version"):
        Schedule.from_tag("looks=3,6,9;spending=obf;alpha=0.05;margin=0.03;min_deciding=5;spend=0.0415")


def test_decisions_on_equal_differences():
    # 15 equal differences: every other sign pattern sums lower, so the exact p is 2^-15 whatever the size
    # of the difference: +30 and +5 points hold, -30 is contradicted; zeros are equivalent within +-3
    # points under the shift model (both shifted sums are 15 x 3 points of one sign).
    differences = np.array([np.full(15, 0.3), np.full(15, -0.3), np.full(15, 0.05), np.zeros(15)])
    assert list(sequential.run_fixed(differences)) == [HOLDS, CONTRADICTED, HOLDS, EQUIVALENT]
    # "Does not help": a loss of 30 points holds (gain below +3), a gain of 30 is contradicted.
    assert list(sequential.run_fixed(differences[:2], kind=NO_GAIN)) == [CONTRADICTED, HOLDS]
    # The earlier test by betting: +30 points hold (1.3^15 >= 40), +5 decide nothing (1.05^15 = 2.1).
    earlier = sequential.run_fixed(differences[:3], test=sequential.TEST_BETTING, assume=NONE)
    assert list(earlier) == [HOLDS, CONTRADICTED, CONTINUE]


def test_equivalence_needs_both_one_sided_tests():
    # Shape-free (betting): 120 differences of exactly 0 pass each test against +-3 points at 5%
    # (0.97^-120 >= 20), 90 do not.
    assert sequential.run_fixed(np.zeros((1, 120)), assume=NONE)[0] == EQUIVALENT
    assert sequential.run_fixed(np.zeros((1, 90)), assume=NONE)[0] == CONTINUE
    # Shift model: +4 points on every seed shows "above -3" but not "below +3": never equivalent.
    shifted = np.full((1, 15), 0.04)
    assert sequential.run_fixed(shifted)[0] == HOLDS
    assert sequential.run_fixed(shifted, kind=NO_GAIN)[0] == CONTRADICTED


def test_a_claims_parts_share_its_level():
    # Six equal differences: p = 2^-6 = 1.6%, at most 2.5% a side, not 2.5% / 2; five never decide.
    differences = np.full((1, 6), 0.3)
    assert sequential.run_fixed(differences, parts=1)[0] == HOLDS
    assert sequential.run_fixed(differences, parts=2)[0] == CONTINUE
    assert sequential.run_fixed(differences[:, :5])[0] == CONTINUE
    assert sequential.claim_level(0.05, 5) == pytest.approx(0.01)
    assert sequential.unreachable_line(5, GREATER, 0.05).startswith(
        "not tested: with 5 seeds no exact test reaches 2.5% a side (its smallest p is 2^-5 = 3.12%"
    )


def test_the_procedure_stops_at_its_first_decision():
    # O'Brien-Fleming spending at looks 3, 6, 9, 12, 15: the looks at 3 and 6 may spend under one pattern
    # of 2^n (0.04% at 6 seeds), the look at 9 one of 512 (0.38%): equal differences cross there; zeros
    # are equivalent there under the shift model, and never decided shape-free.
    differences = np.array([np.full(15, 0.5), np.zeros(15)])
    run = sequential.run_sequential(differences, Schedule((3, 6, 9, 12, 15)))
    assert list(run.decision) == [HOLDS, EQUIVALENT]
    assert list(run.seeds) == [9, 9]
    run = sequential.run_sequential(differences, Schedule((3, 6, 9, 12, 15), assume=NONE))
    assert list(run.decision) == [HOLDS, CONTINUE]
    assert list(run.seeds) == [9, 15]


def test_a_design_tag_round_trips_and_the_earlier_betting_tag_is_still_read():
    schedule = Schedule((3, 6, 9), assume=NONE)
    assert Schedule.from_tag(schedule.tag()) == schedule
    earlier = Schedule.from_tag("looks=3,6,9;test=betting;alpha=0.05;margin=0.03")
    assert (earlier.test, earlier.assume) == (sequential.TEST_BETTING, NONE)
    with pytest.raises(ValueError, match="assume must be one of shift, none"):
        Schedule((3, 6), assume="normal")


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be"):
        sequential.shown(np.zeros((1, 3)), "less", 0.05, 0.03)


def test_the_rows_a_claim_compares_are_known_before_any_run():
    from analysis.claims.replay import block_claim_names, rows_compared
    from analysis.runs.blocks import get_block
    from analysis.runs.cells import Plan

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
