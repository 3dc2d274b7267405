"""The sequential design on hand-checkable cases: schedules, tags, decisions, stopping."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import sequential_design
from analysis.sequential_design import CONTINUE, CONTRADICTED, EQUIVALENT, HOLDS, NO_GAIN, Schedule


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
    # 15 equal differences: +30 points hold (1.3^15 >= 40), -30 are contradicted, +5 decide nothing.
    differences = np.array([np.full(15, 0.3), np.full(15, -0.3), np.full(15, 0.05)])
    assert list(sequential_design.run_fixed(differences)) == [HOLDS, CONTRADICTED, CONTINUE]
    # "Does not help": a loss of 30 points holds (gain below +3), a gain of 30 is contradicted.
    assert list(sequential_design.run_fixed(differences[:2], kind=NO_GAIN)) == [CONTRADICTED, HOLDS]


def test_equivalence_needs_both_one_sided_tests():
    # 120 differences of exactly 0: each test against +-3 points at 5% passes (0.97^-120 >= 20).
    assert sequential_design.run_fixed(np.zeros((1, 120)))[0] == EQUIVALENT
    assert sequential_design.run_fixed(np.zeros((1, 90)))[0] == CONTINUE


def test_a_claims_parts_share_its_level():
    # (1.3)^15 = 51: holds at 2.5% a side (40), not at 2.5% / 2 (80).
    differences = np.full((1, 15), 0.3)
    assert sequential_design.run_fixed(differences, parts=1)[0] == HOLDS
    assert sequential_design.run_fixed(differences, parts=2)[0] == CONTINUE
    assert sequential_design.claim_level(0.05, 5) == pytest.approx(0.01)


def test_the_procedure_stops_at_its_first_decision():
    # +50 points a seed: capital 1.5^n >= 40 from n = 10, so the look at 12 decides; 0 never does.
    schedule = Schedule((3, 6, 9, 12, 15))
    differences = np.array([np.full(15, 0.5), np.zeros(15)])
    run = sequential_design.run_sequential(differences, schedule)
    assert list(run.decision) == [HOLDS, CONTINUE]
    assert list(run.seeds) == [12, 15]


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be"):
        sequential_design.shown(np.zeros((1, 3)), "less", 0.05, 0.03)


def test_the_rows_a_claim_compares_are_known_before_any_run():
    from analysis.block_rows import get_block
    from analysis.cells import Plan
    from analysis.sequential_replay import block_claim_names, rows_compared

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
