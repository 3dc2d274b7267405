"""The claims check gives the right verdict where a claim holds, where it fails, and where cells are missing."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from analysis.claims import checks
from analysis.render import claims as claims_text
from analysis.runs.blocks import get_block, report_blocks
from analysis.runs.cells import CellResult, Plan, empty_result
from analysis.stats.comparison import PAIRED_TASKS, Comparison
from analysis.stats.sequential import GREATER, NO_GAIN, NONE, SHIFT

BLOCKS = report_blocks()
PLAN = Plan(tuple(BLOCKS.by_name.values()), scale="tiny")
TASKS = 128
SEEDS = tuple(range(15))
"""The seeds every block of these tests ran: enough for the exact sign-flip verdicts to decide a
consistent gap of any size (2^-15), and few enough to enumerate every sign pattern."""


def run_ids(key, seeds: int) -> tuple[str, ...]:
    return tuple(f"{key}-{seed}" for seed in range(seeds))


def result(key, rates: list[float]) -> CellResult:
    outcomes = tuple(pd.Series(np.r_[np.ones(round(r * TASKS)), np.zeros(TASKS - round(r * TASKS))]) for r in rates)
    seeds = tuple(range(len(rates)))
    return CellResult(key, run_ids(key, len(rates)), seeds, np.array(rates), outcomes, expected=SEEDS)


def near(rate: float, seeds: int = len(SEEDS)) -> list[float]:
    """``seeds`` seeds close to ``rate`` (one task apart)."""
    return cycle([rate - 1 / TASKS, rate, rate + 1 / TASKS])[:seeds]


def cycle(rates: list[float]) -> list[float]:
    """``rates`` repeated over ``SEEDS``."""
    return (rates * len(SEEDS))[: len(SEEDS)]


GACA_KEY = PLAN.cell(BLOCKS.main.variant("gaca"), "household", "tiny")


ABLATION_GACA_KEY = PLAN.cell(BLOCKS.main.variant("gaca"), BLOCKS.ablation_environment, BLOCKS.ablation_scale)


def diagnostics(lambda_mean: float = 0.4995, clamp: float = 0.002, seeds: int = len(SEEDS)) -> pd.DataFrame:
    """Diagnostics logged by the runs of GACA's default cells (``result``'s run ids) in the main
    block's household/tiny setting and in the ablation setting."""
    return pd.DataFrame(
        [
            (env, scale, run_id, seed, metric, value + 1e-4 * seed)
            for env, scale, key in (
                ("household", "tiny", GACA_KEY),
                (BLOCKS.ablation_environment, BLOCKS.ablation_scale, ABLATION_GACA_KEY),
            )
            for seed, run_id in enumerate(run_ids(key, seeds))
            for metric, value in (("diag/lambda_mean", lambda_mean), ("diag/clamp_frac", clamp))
        ],
        columns=["env", "scale", "run_id", "seed", "metric", "value"],
    )


def evidence(
    ablations: dict[str, list[float]] | None = None,
    main: dict[str, list[float]] | None = None,
    diag: pd.DataFrame | None = None,
) -> checks.Evidence:
    """Cells filled from ``{"block/variant": rates}`` (ablations at the ablation setting) and ``{method: rates}``."""
    cells = {key: empty_result(key, SEEDS) for key in PLAN.wanted()}
    for name, rates in (ablations or {}).items():
        block, variant = name.split("/")
        key = PLAN.cell(get_block(block).variant(variant), BLOCKS.ablation_environment, BLOCKS.ablation_scale)
        cells[key] = result(key, rates)
    for method, rates in (main or {}).items():
        key = PLAN.cell(BLOCKS.main.variant(method), "household", "tiny")
        cells[key] = result(key, rates)
    return checks.Evidence(PLAN, cells, diagnostics() if diag is None else diag)


GOOD = {
    "detector/random": near(0.02),
    "detector/uniform": near(0.3),  # also lambda0 = 0.5 and modulation 0
    "detector/entropy": near(0.9),  # GACA with every default
    "lambda0/lambda0=0": near(0.05),
    "lambda0/lambda0=0.25": near(0.2),
    "lambda0/lambda0=0.75": near(0.25),
    "lambda0/lambda0=1": near(0.02),
    "modulation/modulation=1": near(0.6),
    "alpha_c/alpha_c=0.7": near(0.6),
    "alpha_c/alpha_c=0.5": near(0.5),
}


def verdict(check, **kwargs) -> str:
    return check(evidence(**kwargs)).verdict


def test_every_claim_holds_where_the_data_agrees():
    world = evidence(GOOD, {"grpo": near(0.1), "gigpo": near(0.5), "gaca": near(0.9)})
    checked = checks.check(world)
    assert [c.verdict for c in checked] == [checks.HOLDS] * 7
    assert len(checked) == len(checks.CLAIMS)


@pytest.mark.parametrize(
    ("check", "change"),
    [
        (checks.detector_order, {"detector/random": near(0.95)}),
        (checks.no_fixed_lambda0_matches, {"lambda0/lambda0=0.25": near(0.95), "detector/entropy": near(0.4)}),
        (checks.lambda0_concave, {"lambda0/lambda0=1": near(0.8)}),  # the end beats the middle
        (checks.lambda0_concave, {"lambda0/lambda0=0": near(0.8)}),
        (checks.modulation_gives_back, {"modulation/modulation=1": near(0.95), "detector/entropy": near(0.6)}),
        (checks.modulation_gives_back, {"modulation/modulation=1": near(0.05)}),  # gives back everything
        (checks.alpha_c_does_not_help, {"alpha_c/alpha_c=0.7": near(0.9), "detector/entropy": near(0.3)}),
    ],
)
def test_each_ablation_claim_is_contradicted_where_the_data_disagrees(check, change):
    assert verdict(check, ablations={**GOOD, **change}) == checks.CONTRADICTED


@pytest.mark.parametrize(
    ("check", "drop"),
    [
        (checks.detector_order, "detector/random"),
        (checks.no_fixed_lambda0_matches, "detector/entropy"),
        (checks.lambda0_concave, "lambda0/lambda0=1"),
        (checks.modulation_gives_back, "modulation/modulation=1"),
        (checks.alpha_c_does_not_help, "alpha_c/alpha_c=0.5"),
    ],
)
def test_a_missing_or_partial_cell_gives_missing_runs(check, drop):
    missing = {name: rates for name, rates in GOOD.items() if name != drop}
    assert verdict(check, ablations=missing) == checks.MISSING
    partial = {**GOOD, drop: GOOD.get(drop, near(0.9))[:-1]}
    claim = check(evidence(partial))
    assert claim.verdict == checks.MISSING
    assert any("14 of 15 seeds (missing seed 14)" in note for note in claim.notes)


def test_a_sweep_point_never_run_is_left_out_with_a_note():
    sweep = {name: rates for name, rates in GOOD.items() if name != "lambda0/lambda0=0.75"}
    claim = checks.lambda0_concave(evidence(sweep))
    assert claim.verdict == checks.HOLDS
    assert any("lambda0=0.75 was not run" in note for note in claim.notes)


def test_concavity_compares_the_middle_point_with_both_ends():
    claim = checks.lambda0_concave(evidence(GOOD))
    compared = [name for name, _ in claim.comparisons]
    assert compared == ["lambda0=0.5 − lambda0=0", "lambda0=0.5 − lambda0=1"]
    # The middle beats lambda0 = 0 inside the noise: the sweep is not shown concave, nor shown not to be.
    noisy = {**GOOD, "lambda0/lambda0=0": cycle([0.05, 0.3, 0.55]), "detector/uniform": cycle([0.3, 0.28, 0.32])}
    assert checks.lambda0_concave(evidence(noisy)).verdict == checks.INCONCLUSIVE


def test_the_right_direction_inside_the_noise_is_inconclusive():
    # uniform ahead by 12 points, behind by 10, level, in turn: +0.7 points on average, nowhere near shown
    close = {**GOOD, "detector/random": cycle([0.55, 0.7, 0.85]), "detector/uniform": cycle([0.67, 0.6, 0.85])}
    claim = checks.detector_order(evidence(close))
    assert claim.verdict == checks.INCONCLUSIVE
    assert "→ inconclusive" in claim.numbers[-4]  # uniform − random, before entropy − uniform and its power


def test_the_wrong_direction_inside_the_noise_is_inconclusive_not_contradicted():
    # uniform below random on the mean, but the interval straddles zero.
    close = {**GOOD, "detector/random": cycle([0.6, 0.7, 0.8]), "detector/uniform": cycle([0.5, 0.72, 0.82])}
    claim = checks.detector_order(evidence(close))
    comparison = dict(claim.comparisons)["uniform − random"]
    assert comparison.estimate < 0 < comparison.high
    assert claim.verdict == checks.INCONCLUSIVE


def comparison(differences: np.ndarray) -> Comparison:
    """A paired comparison of these per-seed differences (its other fields say nothing here)."""
    return Comparison(
        float(differences.mean()), PAIRED_TASKS, differences.size, 0.01, 0.01, 0.5, 0.5, differences=differences
    )


@pytest.mark.parametrize(
    ("differences", "expected"),
    [
        (np.full(15, 0.3), checks.HOLDS),
        (np.full(15, 0.05), checks.HOLDS),  # every seed agrees: p = 2^-15, a shift of any size
        (np.full(15, -0.3), checks.CONTRADICTED),
        (np.array([0.3, -0.3] * 7 + [0.3]), checks.INCONCLUSIVE),
    ],
)
def test_greater_is_decided_by_its_test(differences, expected):
    verdict, text = checks.test(comparison(differences), GREATER)
    assert verdict == expected
    if expected != checks.INCONCLUSIVE:
        assert "rests on: exact under the sharp null; a gain in the mean assumes a shift" in text


@pytest.mark.parametrize(
    ("differences", "assume", "expected", "detail"),
    [
        (np.zeros(15), SHIFT, checks.HOLDS, "equivalent within ±3 pts (TOST)"),
        (np.zeros(15), NONE, checks.INCONCLUSIVE, "any-shape 95% interval for the mean"),
        (np.zeros(120), NONE, checks.HOLDS, "rests on: shape-free"),
        (np.full(15, -0.3), SHIFT, checks.HOLDS, "gain below +3 pts"),
        (np.array([0.1, -0.1] * 7 + [0.0]), SHIFT, checks.INCONCLUSIVE, "95% shift interval ["),
        (np.full(15, 0.3), SHIFT, checks.CONTRADICTED, "rests on: assumes a shift with symmetric noise"),
    ],
)
def test_does_not_help_is_a_one_sided_test_against_the_margin(differences, assume, expected, detail):
    # Shape-free, all seeds equal (collapsed) say nothing before 99 seeds: 0.97^-n >= 20.
    verdict, text = checks.test(comparison(differences), NO_GAIN, assume=assume)
    assert verdict == expected
    assert detail in text


def test_a_claims_parts_are_tested_at_alpha_over_their_number():
    differences = np.array([0.3] * 6 + [-0.01])  # p = 2 / 2^7 = 1.6%: at most 2.5% a side, not 1.25%
    assert checks.test(comparison(differences), GREATER)[0] == checks.HOLDS
    verdict, text = checks.test(comparison(differences), GREATER, parts=2)
    assert verdict == checks.INCONCLUSIVE
    assert "97.5% shift interval" in text
    # Six seeds reach 2.5% a side (2^-6) but not 1.25%: one line instead of a verdict.
    verdict, text = checks.test(comparison(np.full(6, 0.3)), GREATER, parts=2)
    assert verdict == checks.INCONCLUSIVE
    assert text.startswith("not tested: with 6 seeds no exact test reaches 1.25% a side")


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([checks.HOLDS, checks.HOLDS], checks.HOLDS),
        ([checks.HOLDS, checks.INCONCLUSIVE], checks.INCONCLUSIVE),
        ([checks.INCONCLUSIVE, checks.MISSING], checks.MISSING),
        ([checks.HOLDS, checks.MISSING, checks.CONTRADICTED], checks.CONTRADICTED),
        ([checks.EQUIVALENT, checks.INCONCLUSIVE], checks.INCONCLUSIVE),
        ([checks.EQUIVALENT, checks.HOLDS], checks.INCONCLUSIVE),
        ([checks.EQUIVALENT, checks.EQUIVALENT], checks.EQUIVALENT),
        ([], checks.MISSING),
    ],
)
def test_a_composite_claim_is_contradicted_by_any_part_and_holds_when_all_do(verdicts, expected):
    assert checks.combine(verdicts) == expected


@pytest.mark.parametrize(
    ("main", "expected"),
    [
        ({"grpo": near(0.1), "gigpo": near(0.5), "gaca": near(0.9)}, checks.HOLDS),
        ({"grpo": near(0.5), "gigpo": near(0.1), "gaca": near(0.9)}, checks.CONTRADICTED),
        ({"grpo": near(0.1), "gigpo": near(0.5)}, checks.MISSING),
        ({}, checks.MISSING),
    ],
)
def test_main_order(main, expected):
    assert verdict(checks.main_order, main=main) == expected


@pytest.mark.parametrize(
    ("diag", "expected"),
    [
        (diagnostics(), checks.HOLDS),
        (diagnostics(lambda_mean=0.6), checks.CONTRADICTED),
        (diagnostics(clamp=0.03), checks.CONTRADICTED),
        (diagnostics(seeds=2), checks.MISSING),
    ],
)
def test_gate_in_linear_regime(diag, expected):
    assert verdict(checks.gate_in_linear_regime, main={"gaca": near(0.9)}, diag=diag) == expected


def test_numbers_intervals_pairing_and_power_are_reported():
    claim = checks.detector_order(evidence(GOOD))
    assert claim.numbers[0].startswith("random: 2.00 ± 0.66 [")
    difference = re.search(
        r"entropy − uniform: \+(\d+\.\d+) pts .* 97.5% shift interval \[\+(\d+\.\d+), \+(\d+\.\d+)\] \(sign-flip\)",
        claim.numbers[-2],
    )
    low, estimate, high = float(difference[2]), float(difference[1]), float(difference[3])
    # every seed differs by exactly 60 points: the only shift no sign flip rejects is 60
    assert low == estimate == high == pytest.approx(60.0)
    assert "(paired by seed and task, n=15); exact sign-flip p = 3.05e-05 (one-sided, a > b)" in claim.numbers[-2]
    assert (
        "a ahead on 15 of 15 paired seeds, P(a > b) = 1.00 [0.75, 1.00] (exact sign-test interval)"
        in (claim.numbers[-2])
    )
    assert re.fullmatch(
        r"power of entropy − uniform: detects \d+\.\d pts at 80% with n=15; 3 pts needs \d+ seeds, 5 pts needs \d+ "
        r"seeds",
        claim.numbers[-1],
    )


def test_claims_md_of_the_report(report):
    text = (report.out / "claims.md").read_text()
    verdicts = dict(re.findall(r"\| \d \| (.+?) \| \*\*(.+?)\*\* \|", text))
    assert verdicts["Detector: random < uniform < entropy (Section 4.3)"] == checks.MISSING  # uniform: 2 of 3 seeds
    assert (
        verdicts["The mean lambda equals lambda0 and under 1% of steps sit at a clamp (Section 4.4, Table 7)"]
        == checks.HOLDS
    )
    assert "note: lambda0=0.75 was not run" in text
    assert "## Sample efficiency" in text
    assert "Read as a gain in the *mean* it assumes a shift" in text.replace("\n", " ")
    assert "| 6 | GACA household/tiny − GiGPO household/tiny | paired by seed and task | 3 |" in text


def test_a_block_of_one_seed_is_read_without_intervals_and_says_why():
    """The README's first command trains one seed of the detector block: every claim is inconclusive and
    says that one seed has no interval, instead of printing NaN bounds."""
    one = (0,)
    cells = {key: empty_result(key, one) for key in PLAN.wanted()}
    for variant, rate in (("random", 0.3), ("uniform", 0.5), ("entropy", 0.9)):
        key = PLAN.cell(get_block("detector").variant(variant), BLOCKS.ablation_environment, BLOCKS.ablation_scale)
        cells[key] = dataclasses.replace(result(key, [rate]), expected=one)
    world = checks.Evidence(PLAN, cells, diagnostics(lambda_mean=0.43, clamp=0.08, seeds=1))

    detector = checks.detector_order(world)
    gate = checks.gate_in_linear_regime(world)
    assert detector.verdict == gate.verdict == checks.INCONCLUSIVE
    assert detector.numbers[0] == "random: 30.00 (n=1)"  # no interval: neither NaN nor clipped to [0, 100]
    assert "power of entropy − uniform: not estimable with one seed (no seed-level variance)" in detector.numbers
    where = f"{BLOCKS.ablation_environment}/{BLOCKS.ablation_scale}"
    assert gate.numbers == [
        f"diag/lambda_mean {where}: 0.4300 (n=1; no interval with one seed) → inconclusive",
        f"diag/clamp_frac {where}: 0.0800 (n=1; no interval with one seed) → inconclusive",
    ]
    assert claims_text.ONE_SEED_POWER in claims_text.markdown([detector, gate], [], None)
    assert claims_text.ONE_SEED_POWER not in claims_text.markdown([checks.detector_order(evidence(GOOD))], [], None)
