"""Differences between cells: paired by seed and task where the cells share seeds, unpaired
otherwise, with the power they have; and the seeds a cell is expected to have, from the runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis.claims import checks
from analysis.runs.blocks import get_block
from analysis.runs.cells import CellKey, CellResult, Plan, compare
from analysis.stats import basic
from analysis.stats.comparison import PAIRED_SEEDS, PAIRED_TASKS, UNPAIRED, Comparison, power_line
from analysis.stats.sequential import GREATER, NO_GAIN

TASKS = 40


def cell(name: str, solved: list[int], env: str = "household", seeds: tuple[int, ...] | None = None) -> CellResult:
    """Seed s solves tasks 0 .. solved[s] - 1 of ``TASKS``."""
    seeds = tuple(range(len(solved))) if seeds is None else seeds
    tasks = tuple(pd.Series((np.arange(TASKS) < count).astype(float)) for count in solved)
    success = np.array(solved) / TASKS
    return CellResult(
        CellKey((("name", name),), env, "tiny"), tuple(f"{name}{s}" for s in seeds), seeds, success, tasks
    )


def width(comparison: Comparison) -> float:
    return comparison.high - comparison.low


def test_pairing_removes_the_seed_effect_the_cells_share():
    # Seeds differ by 12 tasks in both cells; a solves the same tasks as b plus two more, every seed.
    b = cell("b", [8, 20, 32])
    a = cell("a", [10, 22, 34])
    paired, unpaired = compare(a, b), compare(a, cell("b", [8, 20, 32], env="shop"))
    assert paired.pairing == PAIRED_TASKS and unpaired.pairing == UNPAIRED
    assert paired.estimate == pytest.approx(0.05) and unpaired.estimate == pytest.approx(0.05)
    # Paired: equal differences every seed, so the task level sets the interval: two 1s among 40
    # task differences, variance p(1 - p) x 40/39 per task, over 40 tasks and 3 seeds, 117 df.
    error = np.sqrt(0.05 * 0.95 * 40 / 39 / 40 / 3)
    assert paired.high - paired.estimate == pytest.approx(scipy.stats.t.ppf(0.975, 117) * error)
    assert paired.standard_error == pytest.approx(error)
    # Unpaired: each cell's seeds vary by 0.3 (variance 0.09), Welch 4 df: t_{4, 0.975} sqrt(0.09 x 2 / 3).
    assert unpaired.high - unpaired.estimate == pytest.approx(2.776445 * np.sqrt(0.06), rel=1e-6)
    assert width(paired) < width(unpaired) / 4


def test_the_paired_interval_is_the_t_interval_of_the_per_seed_differences():
    # No task noise in the differences: a beats b by 2, 4 and 9 tasks of 40 on the same tasks.
    a, b = cell("a", [12, 24, 39]), cell("b", [10, 20, 30])
    comparison = compare(a, b)
    differences = np.array([2, 4, 9]) / TASKS
    half = 4.302653 * differences.std(ddof=1) / np.sqrt(3)
    assert comparison.low == pytest.approx(differences.mean() - half, rel=1e-6)
    assert comparison.high == pytest.approx(differences.mean() + half, rel=1e-6)


def test_pairing_does_not_narrow_what_the_cells_do_not_share():
    # Seed values uncorrelated between the cells: var(a - b) = var(a) + var(b) = 0.01 + 0.03.
    a = CellResult(CellKey((), "household", "tiny"), ("a0", "a1", "a2"), (0, 1, 2), np.array([0.5, 0.7, 0.6]), None)
    b = CellResult(
        CellKey((("b", 1),), "household", "tiny"), ("b0", "b1", "b2"), (0, 1, 2), np.array([0.7, 0.7, 0.4]), None
    )
    paired = compare(a, b)
    unpaired = compare(a, CellResult(CellKey(b.key.config, "shop", "tiny"), b.run_ids, b.seeds, b.success, None))
    assert paired.pairing == PAIRED_SEEDS and unpaired.pairing == UNPAIRED
    assert paired.variance == pytest.approx(0.04) and unpaired.variance == pytest.approx(0.04)
    assert paired.standard_error == pytest.approx(unpaired.standard_error)
    # Paired: 2 df; Welch: 0.04^2 / (0.01^2 / 2 + 0.03^2 / 2) = 3.2 df, so unpaired is a little narrower.
    assert width(paired) == pytest.approx(2 * 4.302653 * np.sqrt(0.04 / 3), rel=1e-6)
    assert width(unpaired) == pytest.approx(2 * scipy.stats.t.ppf(0.975, 3.2) * np.sqrt(0.04 / 3), rel=1e-6)


def test_one_shared_seed_gives_no_interval():
    comparison = compare(cell("a", [12]), cell("b", [10]))
    assert comparison.pairing == PAIRED_TASKS and not comparison.estimable
    assert np.isnan(comparison.minimum_detectable_effect) and comparison.seeds_needed(0.03) is None
    for kind in (GREATER, NO_GAIN):
        verdict, detail = checks.test(comparison, kind)
        assert verdict == checks.INCONCLUSIVE and "no interval with one seed" in detail


def test_pairing_uses_the_shared_seeds_only():
    a = cell("a", [10, 22, 34, 16, 28], seeds=(0, 1, 2, 3, 4))
    b = cell("b", [8, 20, 32])
    comparison = compare(a, b)
    assert (comparison.pairing, comparison.seeds) == (PAIRED_TASKS, 3)
    assert comparison.estimate == pytest.approx(0.05)  # seeds 0-2, not the difference of the cell means


def test_cells_on_other_tasks_are_paired_by_seed_only():
    a, b = cell("a", [10, 22, 34]), cell("b", [8, 20, 32])
    shifted = CellResult(b.key, b.run_ids, b.seeds, b.success, tuple(s.set_axis(s.index + 100) for s in b.task_success))
    assert compare(a, shifted).pairing == PAIRED_SEEDS


def test_the_area_under_the_curve_is_compared_by_seed():
    a = CellResult(
        CellKey((), "household", "tiny"), ("a0", "a1"), (0, 1), np.array([0.5, 0.6]), None, np.array([0.3, 0.5])
    )
    b = CellResult(
        CellKey((("b", 1),), "household", "tiny"),
        ("b0", "b1"),
        (0, 1),
        np.array([0.4, 0.6]),
        None,
        np.array([0.2, 0.3]),
    )
    comparison = compare(a, b, "auc")
    assert (comparison.pairing, comparison.estimate) == (PAIRED_SEEDS, pytest.approx(0.15))
    # Differences 0.1 and 0.2: 0.15 +- t_{1, 0.975} x 0.0707 / sqrt(2) = 0.15 +- 12.706 x 0.05.
    assert comparison.low == pytest.approx(0.15 - 12.706205 * 0.05) and comparison.high == pytest.approx(
        0.15 + 12.706205 * 0.05
    )
    assert compare(a, CellResult(b.key, b.run_ids, b.seeds, b.success, None), "auc") is None  # b has no curve


def test_power_follows_the_seeds_found():
    three = compare(cell("a", [10, 22, 34]), cell("b", [8, 21, 31]))
    five = compare(cell("a", [10, 22, 34, 16, 28]), cell("b", [8, 21, 31, 15, 27]))
    assert five.seeds == 5 and three.seeds == 3
    # The seed level binds here: per-seed differences 2, 1, 3 (and 1, 1) tasks of 40.
    assert three.minimum_detectable_effect == pytest.approx(basic.minimum_detectable_effect(three.levels, 3))
    assert three.minimum_detectable_effect > 5.65 * np.sqrt(three.variance / 3)  # noncentral t, 2 df
    assert three.seeds_needed(three.minimum_detectable_effect * (1 + 1e-9)) == 3
    assert five.seeds_needed(five.minimum_detectable_effect * (1 + 1e-9)) == 5
    line = power_line([three, five])
    assert "with 3-5 seeds the smallest detectable difference is" in line
    assert "paired by seed and task" in line and "t test" in line


def test_expected_seeds_come_from_the_runs_not_a_constant():
    plan = Plan((get_block("detector"), get_block("lambda0")))
    key = {v.name: plan.cell(v, *plan.settings(b)[0]) for b in plan.blocks for v in b.variants}
    five, three = (0, 1, 2, 3, 4), (0, 1, 2)
    found = {key["random"]: five, key["entropy"]: five, key["uniform"]: three}
    found.update({key[f"lambda0={x}"]: three for x in ("0", "0.25", "0.75", "1")})
    expected = plan.expected_seeds(found)
    assert expected[key["random"]] == five
    assert expected[key["uniform"]] == five  # a detector row: the detector block ran five seeds
    assert expected[key["lambda0=0"]] == three  # the lambda0 block ran three, whatever GACA has
    assert expected[key["gaca"]] == five
    uniform = CellResult(
        key["uniform"], ("u0", "u1", "u2"), three, np.zeros(3), None, expected=expected[key["uniform"]]
    )
    assert (uniform.complete, uniform.missing_seeds, uniform.expected_seeds) == (False, (3, 4), 5)
    assert set(expected) == plan.wanted()
