"""The claims check gives the right verdict where a claim holds, where it fails, and where cells are missing."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analysis import claims
from analysis.blocks import BLOCKS, MAIN, get_block
from analysis.cells import CellResult, Plan, empty_result

PLAN = Plan(tuple(BLOCKS.values()), scale="tiny")
TASKS = 128


def result(key, rates: list[float]) -> CellResult:
    outcomes = tuple(np.r_[np.ones(round(r * TASKS)), np.zeros(TASKS - round(r * TASKS))] for r in rates)
    return CellResult(
        key, tuple(f"{key}-{seed}" for seed in range(len(rates))), tuple(range(len(rates))), np.array(rates), outcomes
    )


def near(rate: float, seeds: int = 3) -> list[float]:
    """Three seeds close to ``rate`` (one task apart)."""
    return [rate - 1 / TASKS, rate, rate + 1 / TASKS][:seeds]


def diagnostics(lambda_mean: float = 0.4995, clamp: float = 0.002, seeds: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        [
            ("household", "tiny", f"run{seed}", seed, metric, value + 1e-4 * seed)
            for seed in range(seeds)
            for metric, value in (("diag/lambda_mean", lambda_mean), ("diag/clamp_frac", clamp))
        ],
        columns=["env", "scale", "run_id", "seed", "metric", "value"],
    )


def evidence(
    ablations: dict[str, list[float]] | None = None,
    main: dict[str, list[float]] | None = None,
    diag: pd.DataFrame | None = None,
) -> claims.Evidence:
    """Cells filled from ``{"block/variant": rates}`` (ablations at household/tiny) and ``{method: rates}``."""
    cells = {key: empty_result(key) for key in PLAN.wanted()}
    for name, rates in (ablations or {}).items():
        block, variant = name.split("/")
        key = PLAN.cell(get_block(block).variant(variant), "household", "tiny")
        cells[key] = result(key, rates)
    for method, rates in (main or {}).items():
        key = PLAN.cell(MAIN.variant(method), "household", "tiny")
        cells[key] = result(key, rates)
    return claims.Evidence(PLAN, cells, diagnostics() if diag is None else diag)


GOOD = {
    "detector/random": near(0.5),
    "detector/uniform": near(0.7),  # also lambda0 = 0.5 and modulation 0
    "detector/entropy": near(0.9),  # GACA with every default
    "lambda0/lambda0=0": near(0.55),
    "lambda0/lambda0=0.25": near(0.65),
    "lambda0/lambda0=0.75": near(0.62),
    "lambda0/lambda0=1": near(0.5),
    "modulation/modulation=1": near(0.8),
    "alpha_c/alpha_c=0.7": near(0.86),
    "alpha_c/alpha_c=0.5": near(0.8),
}


def verdict(check, **kwargs) -> str:
    return check(evidence(**kwargs)).verdict


def test_every_claim_holds_where_the_data_agrees():
    world = evidence(GOOD, {"grpo": near(0.5), "gigpo": near(0.7), "gaca": near(0.9)})
    checked = claims.check(world)
    assert [c.verdict for c in checked] == [claims.HOLDS] * 7
    assert len(checked) == len(claims.CLAIMS)


@pytest.mark.parametrize(
    ("check", "change"),
    [
        (claims.detector_order, {"detector/random": near(0.95)}),
        (claims.no_fixed_lambda0_matches, {"lambda0/lambda0=0.25": near(0.95)}),
        (claims.lambda0_concave, {"lambda0/lambda0=1": near(0.8)}),  # optimum at an endpoint
        (claims.lambda0_concave, {"lambda0/lambda0=0.25": near(0.56)}),  # interior optimum, not concave
        (claims.modulation_gives_back, {"modulation/modulation=1": near(0.95)}),  # no give-back
        (claims.modulation_gives_back, {"modulation/modulation=1": near(0.6)}),  # gives back everything
        (claims.alpha_c_does_not_help, {"alpha_c/alpha_c=0.7": near(0.98)}),
    ],
)
def test_each_ablation_claim_fails_where_the_data_disagrees(check, change):
    assert verdict(check, ablations={**GOOD, **change}) == claims.FAILS


@pytest.mark.parametrize(
    ("check", "drop"),
    [
        (claims.detector_order, "detector/random"),
        (claims.no_fixed_lambda0_matches, "detector/entropy"),
        (claims.lambda0_concave, "lambda0/lambda0=1"),
        (claims.modulation_gives_back, "modulation/modulation=1"),
        (claims.alpha_c_does_not_help, "alpha_c/alpha_c=0.5"),
    ],
)
def test_a_missing_or_partial_cell_gives_not_enough_data(check, drop):
    missing = {name: rates for name, rates in GOOD.items() if name != drop}
    assert verdict(check, ablations=missing) == claims.NOT_ENOUGH
    partial = {**GOOD, drop: GOOD.get(drop, near(0.9))[:2]}
    claim = check(evidence(partial))
    assert claim.verdict == claims.NOT_ENOUGH
    assert any("2 of 3 seeds" in note for note in claim.notes)


def test_a_sweep_point_never_run_is_left_out_with_a_note():
    sweep = {name: rates for name, rates in GOOD.items() if name != "lambda0/lambda0=0.75"}
    claim = claims.lambda0_concave(evidence(sweep))
    assert claim.verdict == claims.HOLDS
    assert any("lambda0=0.75 was not run" in note for note in claim.notes)


def test_the_right_direction_inside_the_noise_is_not_enough_data():
    close = {**GOOD, "detector/random": [0.55, 0.7, 0.85], "detector/uniform": [0.6, 0.72, 0.85]}
    claim = claims.detector_order(evidence(close))
    assert claim.verdict == claims.NOT_ENOUGH
    assert "→ not enough data" in claim.numbers[-2]


@pytest.mark.parametrize(
    ("main", "expected"),
    [
        ({"grpo": near(0.5), "gigpo": near(0.7), "gaca": near(0.9)}, claims.HOLDS),
        ({"grpo": near(0.7), "gigpo": near(0.5), "gaca": near(0.9)}, claims.FAILS),
        ({"grpo": near(0.5), "gigpo": near(0.7)}, claims.NOT_ENOUGH),
        ({}, claims.NOT_ENOUGH),
    ],
)
def test_main_order(main, expected):
    assert verdict(claims.main_order, main=main) == expected


@pytest.mark.parametrize(
    ("diag", "expected"),
    [
        (diagnostics(), claims.HOLDS),
        (diagnostics(lambda_mean=0.6), claims.FAILS),
        (diagnostics(clamp=0.03), claims.FAILS),
        (diagnostics(seeds=2), claims.NOT_ENOUGH),
    ],
)
def test_gate_in_linear_regime(diag, expected):
    assert verdict(claims.gate_in_linear_regime, main={"gaca": near(0.9)}, diag=diag) == expected


def test_numbers_and_intervals_are_reported():
    claim = claims.detector_order(evidence(GOOD))
    assert claim.numbers[0].startswith("random: 50.00 ± 0.78 [")
    difference = re.search(r"entropy − uniform: \+(\d+\.\d+) pts \[\+(\d+\.\d+), \+(\d+\.\d+)\]", claim.numbers[-1])
    low, estimate, high = float(difference[2]), float(difference[1]), float(difference[3])
    assert low < estimate < high
    assert estimate == pytest.approx(20.0)


def test_claims_md_of_the_report(report):
    text = (report.out / "claims.md").read_text()
    verdicts = dict(re.findall(r"\| \d \| (.+?) \| \*\*(.+?)\*\* \|", text))
    assert verdicts["Detector: random < uniform < entropy (Section 4.3)"] == claims.NOT_ENOUGH  # uniform: 2 of 3 seeds
    assert verdicts["alpha_c < 1 does not help with a sparse reward (Section 4.3)"] == claims.HOLDS
    assert (
        verdicts["The mean lambda equals lambda0 and under 1% of steps sit at a clamp (Section 4.4, Table 7)"]
        == claims.HOLDS
    )
    assert "note: lambda0=0.75 was not run" in text
    assert "## Sample efficiency" in text
