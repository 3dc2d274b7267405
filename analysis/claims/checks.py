"""The paper's qualitative claims (Section 4), each checked on the runs with its numbers, a 95%
interval, its power and a verdict (the rule is ``analysis.render.claims.verdict_rule``, printed at the
top of claims.md; ``analysis.render.claims`` writes them).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.runs.blocks import DEFAULT_CONFIG, Block, Variant, get_block, number, report_blocks
from analysis.runs.cells import CellKey, CellResult, Plan, compare
from analysis.stats import basic, sequential, signflip
from analysis.stats.comparison import Comparison
from gaca.estimators.registry import claimed_order, estimator_label

HOLDS, CONTRADICTED, INCONCLUSIVE, MISSING = "holds", "contradicted", "inconclusive", "missing runs"
EQUIVALENT = sequential.EQUIVALENT
DEFAULT_ASSUME = sequential.DEFAULT_ASSUME
"""A verdict on "a > b" (or a claim all of whose parts are) shown inside the margin by two one-sided tests."""
MARGIN_POINTS = 100 * basic.EQUIVALENCE_MARGIN
ALPHA_POINTS = 100 * basic.ALPHA
LAMBDA_TOLERANCE = 0.01
"""How far the mean lambda may sit from lambda0 and still "equal" it (clamping moves it slightly)."""
CLAMP_LIMIT = 0.01
"""The paper's "under 1% of steps at a clamp"."""


@dataclass(frozen=True)
class Claim:
    """One checked claim: what the paper says, the numbers, the intervals and the verdict."""

    statement: str
    verdict: str
    numbers: list[str]
    """One line per cell or per comparison, e.g. ``uniform − random: +4.51 pts [+1.20, +7.90] ...``."""
    notes: list[str] = field(default_factory=list)
    comparisons: list[tuple[str, Comparison]] = field(default_factory=list)
    """Each comparison behind the verdict, named ``a − b``, for the power table."""
    kinds: list[str] = field(default_factory=list)
    """Per comparison, what it tests: ``sequential.GREATER`` ("a > b") or ``sequential.NO_GAIN`` (TOST)."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are checked on."""

    plan: Plan
    cells: Mapping[CellKey, CellResult]
    diagnostics: pd.DataFrame
    """``cells.diagnostics`` of the GACA cells: env, scale, run_id, seed, metric, value."""
    assume: str = DEFAULT_ASSUME
    """What "equivalent" and "does not help" assume (``sequential.ASSUMPTIONS``)."""

    def cell(self, block: Block, variant: Variant) -> CellResult:
        env, scale = self.plan.settings(block)[0]
        return self.cells[self.plan.cell(variant, env, scale)]


def combine(verdicts: Sequence[str]) -> str:
    """A claim's verdict from its parts': contradicted if any is, holds if all do, equivalent only if
    all are (an equivalent part refutes an "a > b" claim as much as it supports nothing)."""
    if not verdicts:
        return MISSING
    if CONTRADICTED in verdicts:
        return CONTRADICTED
    if MISSING in verdicts:
        return MISSING
    if all(verdict == HOLDS for verdict in verdicts):
        return HOLDS
    return EQUIVALENT if all(verdict == EQUIVALENT for verdict in verdicts) else INCONCLUSIVE


VERDICTS = {
    sequential.HOLDS: HOLDS,
    sequential.CONTRADICTED: CONTRADICTED,
    sequential.EQUIVALENT: EQUIVALENT,
    sequential.CONTINUE: INCONCLUSIVE,
}
"""A test's decision as a claim verdict (undecided: inconclusive)."""


def test(comparison: Comparison, kind: str, parts: int = 1, assume: str = DEFAULT_ASSUME) -> tuple[str, str]:
    """A comparison's verdict at a fixed seed count (its one look, ``sequential.per_look``, one of ``parts``
    comparisons of its claim, "equivalent" and "does not help" under ``assume``) and what its line says:
    the sign-flip p, the interval of the test that decides (the inverted sign-flip test: a shift), the
    any-shape interval for the mean (betting), the probability of improvement over paired seeds, and what
    the verdict rests on. Where no exact test can reach the level, one line says so instead."""
    differences = comparison.differences
    level = sequential.claim_level(basic.ALPHA, parts)
    seeds = differences.size
    if seeds < 2:
        return INCONCLUSIVE, f"not tested: {_NO_INTERVAL}"
    if not sequential.reachable(seeds, kind, level):
        return INCONCLUSIVE, sequential.unreachable_line(seeds, kind, level)
    confidence = f"{100 * (1 - level):.3g}%"
    low, high = sequential.interval(differences, level)
    mean_low, mean_high = sequential.mean_interval(differences, level)
    share, share_low, share_high = signflip.improvement(differences, level)
    wins = int(np.sum(differences > signflip.TIE))
    shown = (
        f"exact sign-flip p = {float(signflip.p_greater(differences)):.3g} (one-sided, a > b); "
        f"{confidence} shift interval [{100 * low:+.2f}, {100 * high:+.2f}] (sign-flip); "
        f"any-shape {confidence} interval for the mean [{100 * mean_low:+.2f}, {100 * mean_high:+.2f}] (betting); "
        f"a ahead on {wins} of {seeds} paired seeds, P(a > b) = {share:.2f} [{share_low:.2f}, {share_high:.2f}] "
        "(exact sign-test interval)"
    )
    schedule = sequential.Schedule.fixed(seeds, basic.ALPHA, basic.EQUIVALENCE_MARGIN, assume)
    decision = str(sequential.per_look(differences[None], kind, level, schedule)[0, -1])
    verdict = VERDICTS[decision]
    if kind == sequential.NO_GAIN and verdict == HOLDS:
        inside = sequential.tost(differences, level, schedule)
        points = f"{MARGIN_POINTS:g} pts"
        shown += f"; {'equivalent within ±' + points + ' (TOST)' if inside else 'gain below +' + points}"
    rests = sequential.assumption(kind, decision, assume)
    return verdict, shown + (f"; rests on: {rests}" if rests else "")


def describe(result: CellResult, name: str) -> str:
    if result.n == 0:
        return f"{name}: not run"
    std = "" if math.isnan(result.std) else f" ± {100 * result.std:.2f}"
    low, high = result.interval()
    interval = "" if math.isnan(low) else f" [{100 * low:.2f}, {100 * high:.2f}]"
    seeds = f"n={result.n}" if result.complete else f"n={result.n} of {result.expected_seeds}"
    return f"{name}: {100 * result.mean:.2f}{std}{interval} ({seeds})"


_NO_INTERVAL = "no interval with one seed (no seed-level variance)"


def describe_comparison(comparison: Comparison, a: str, b: str, verdict: str, detail: str = "") -> str:
    return (
        f"{a} − {b}: {100 * comparison.estimate:+.2f} pts ({comparison.pairing}, n={comparison.seeds})"
        + (f"; {detail}" if detail else "")
        + f" → {verdict}"
    )


def describe_power(comparison: Comparison, a: str, b: str) -> str:
    """``power of a − b: detects 6.3 pts ...``: the power sentence of one comparison."""
    effect = comparison.minimum_detectable_effect
    if math.isnan(effect):
        reason = "one seed (no seed-level variance)" if comparison.seeds < 2 else f"{comparison.seeds} seeds"
        return f"power of {a} − {b}: not estimable with {reason}"
    needs = ", ".join(
        f"{100 * target:g} pts needs {comparison.seeds_needed(target)} seeds" for target in basic.DETECTION_TARGETS
    )
    return f"power of {a} − {b}: detects {100 * effect:.1f} pts at 80% with n={comparison.seeds}; {needs}"


def _missing(named: Sequence[tuple[str, CellResult]]) -> list[str]:
    notes = []
    for name, result in named:
        if result.n == 0:
            notes.append(f"{name} has no runs")
        elif not result.complete:
            seeds = ", ".join(map(str, result.missing_seeds))
            notes.append(f"{name} has {result.n} of {result.expected_seeds} seeds (missing seed {seeds})")
    return notes


@dataclass
class _Check:
    """The comparisons of one claim as they are made; their verdicts once all are known (each is
    tested at alpha over their number)."""

    numbers: list[str]
    assume: str = DEFAULT_ASSUME
    made: list[tuple[str, str, Comparison, str]] = field(default_factory=list)
    """(a's name, b's name, the comparison, its kind)."""

    def greater(self, a_name: str, a: CellResult, b_name: str, b: CellResult) -> None:
        self.made.append((a_name, b_name, _compared(a, b), sequential.GREATER))

    def no_gain(self, a_name: str, a: CellResult, b_name: str, b: CellResult) -> None:
        self.made.append((a_name, b_name, _compared(a, b), sequential.NO_GAIN))

    def claim(self, statement: str, notes: Sequence[str] = ()) -> Claim:
        numbers = list(self.numbers)
        verdicts = []
        for a_name, b_name, comparison, kind in self.made:
            verdict, detail = test(comparison, kind, len(self.made), self.assume)
            verdicts.append(verdict)
            numbers.append(describe_comparison(comparison, a_name, b_name, verdict, detail))
            numbers.append(describe_power(comparison, a_name, b_name))
        comparisons = [(f"{a} − {b}", comparison) for a, b, comparison, _ in self.made]
        kinds = [kind for *_, kind in self.made]
        return Claim(statement, combine(verdicts), numbers, list(notes), comparisons, kinds)


def _compared(a: CellResult, b: CellResult) -> Comparison:
    """``compare(a, b)`` of two cells that ``_missing`` found run."""
    comparison = compare(a, b)
    if comparison is None:
        raise ValueError(f"{a.key} or {b.key} has no runs: a claim compares only cells with runs")
    return comparison


def ordered(statement: str, named: Sequence[tuple[str, CellResult]], assume: str = DEFAULT_ASSUME) -> Claim:
    """``named[0] < named[1] < ...``: each consecutive pair must increase."""
    check = _Check([describe(result, name) for name, result in named], assume)
    missing = _missing(named)
    if missing:
        return Claim(statement, MISSING, check.numbers, missing)
    for (low_name, low), (high_name, high) in zip(named, named[1:]):
        check.greater(high_name, high, low_name, low)
    return check.claim(statement)


def detector_order(evidence: Evidence) -> Claim:
    block = get_block("detector")
    named = [
        (name, evidence.cell(block, block.at({"algorithm.detector": name})))
        for name in ("random", "uniform", "entropy")
    ]
    return ordered("Detector: random < uniform < entropy (Section 4.3)", named, evidence.assume)


def _sweep(evidence: Evidence) -> tuple[list[tuple[float, str, CellResult]], CellResult]:
    block = get_block("lambda0")
    points = [
        (number(v.config(), "algorithm.lambda0"), v.name, evidence.cell(block, v))
        for v in block.variants
        if v.config()["algorithm.alpha_lambda"] == 0.0
    ]
    return points, evidence.cell(block, block.default())


def _present(points: list[tuple[float, str, CellResult]]) -> tuple[list[tuple[float, str, CellResult]], list[str]]:
    """Sweep points that were run; a point never run is left out (and noted), a partial one is kept."""
    present = sorted((point for point in points if point[2].n > 0), key=lambda point: point[0])
    notes = [f"{name} was not run; the sweep is read without it" for _, name, result in points if result.n == 0]
    return present, notes


def no_fixed_lambda0_matches(evidence: Evidence) -> Claim:
    statement = "No fixed lambda0 (modulation off) matches the adaptive gate (Section 4.3)"
    points, adaptive = _sweep(evidence)
    present, notes = _present(points)
    check = _Check(
        [describe(adaptive, "adaptive")] + [describe(result, name) for _, name, result in present], evidence.assume
    )
    missing = _missing([("adaptive", adaptive)] + [(name, result) for _, name, result in present])
    if missing or not present:
        return Claim(
            statement, MISSING, check.numbers, notes + missing + ([] if present else ["no sweep point was run"])
        )
    for _, name, result in present:
        check.greater("adaptive", adaptive, name, result)
    return check.claim(statement, notes)


def lambda0_concave(evidence: Evidence) -> Claim:
    """Concave with an interior optimum: the middle point of the sweep (the lambda0 nearest the
    middle of the run range, 0.5 on the full sweep) beats both endpoints, each by its interval."""
    statement = "The lambda0 sweep (modulation off) is concave with an interior optimum (Figure 2c)"
    points, _ = _sweep(evidence)
    present, notes = _present(points)
    check = _Check([describe(result, name) for _, name, result in present], evidence.assume)
    missing = _missing([(name, result) for _, name, result in present])
    if missing:
        return Claim(statement, MISSING, check.numbers, notes + missing)
    lambdas = [x for x, _, _ in present]
    if len(present) < 3 or lambdas[0] != 0.0 or lambdas[-1] != 1.0:
        return Claim(
            statement,
            MISSING,
            check.numbers,
            notes + ["needs both endpoints (lambda0 = 0 and 1) and an interior point"],
        )
    interior = present[1:-1]
    _, middle_name, middle = min(interior, key=lambda point: abs(point[0] - (lambdas[0] + lambdas[-1]) / 2))
    means = np.array([result.mean for _, _, result in present])
    slopes = np.diff(means) / np.diff(lambdas)
    check.numbers.append(
        "slopes between neighbours (points per unit of lambda0, no verdict): "
        + ", ".join(f"{100 * s:+.1f}" for s in slopes)
    )
    for _, name, result in (present[0], present[-1]):
        check.greater(middle_name, middle, name, result)
    return check.claim(statement, notes)


def modulation_gives_back(evidence: Evidence) -> Claim:
    block = get_block("modulation")
    named = [(v.name, evidence.cell(block, v)) for v in block.variants]  # 0, 0.5, 1.0
    statement = "Modulation 1.0 gives back part of 0.5's gain: m(0) < m(1.0) < m(0.5) (Section 4.3)"
    check = _Check([describe(result, name) for name, result in named], evidence.assume)
    missing = _missing(named)
    if missing:
        return Claim(statement, MISSING, check.numbers, missing)
    (off_name, off), (half_name, half), (full_name, full) = named
    check.greater(half_name, half, full_name, full)
    check.greater(full_name, full, off_name, off)
    return check.claim(statement)


def alpha_c_does_not_help(evidence: Evidence) -> Claim:
    block = get_block("alpha_c")
    pure = block.at({"algorithm.alpha_c": 1.0})
    fused = [v for v in block.variants if v is not pure]
    statement = "alpha_c < 1 does not help with a sparse reward (Section 4.3)"
    named = [(pure.name, evidence.cell(block, pure))] + [(v.name, evidence.cell(block, v)) for v in fused]
    check = _Check([describe(result, name) for name, result in named], evidence.assume)
    missing = _missing(named)
    if missing:
        return Claim(statement, MISSING, check.numbers, missing)
    for name, result in named[1:]:
        check.no_gain(name, result, pure.name, named[0][1])
    return check.claim(statement)


def main_order(evidence: Evidence) -> Claim:
    """The claimed order in every setting with runs: its consecutive pairs in all settings are the
    claim's comparisons (one family); a setting missing runs makes the claim missing runs."""
    order = claimed_order()
    statement = " > ".join(estimator_label(m) for m in reversed(order)) + " in every setting (Table 1)"
    check = _Check([], evidence.assume)
    notes: list[str] = []
    main = report_blocks().main
    for env, scale in evidence.plan.settings(main):
        named = [
            (f"{estimator_label(m)} {env}/{scale}", evidence.cells[evidence.plan.cell(main.estimator(m), env, scale)])
            for m in order
        ]
        if all(result.n == 0 for _, result in named):
            continue
        check.numbers += [describe(result, name) for name, result in named]
        missing = _missing(named)
        notes += missing
        if missing:
            continue
        for (low_name, low), (high_name, high) in zip(named, named[1:]):
            check.greater(high_name, high, low_name, low)
    if not check.made and not notes:
        notes.append("no setting has runs")
    claim = check.claim(statement, notes)
    return dataclasses.replace(claim, verdict=combine([claim.verdict, MISSING])) if notes else claim


def gate_in_linear_regime(evidence: Evidence) -> Claim:
    """On GACA's default cell in every requested setting (it is a row of every block)."""
    statement = "The mean lambda equals lambda0 and under 1% of steps sit at a clamp (Section 4.4, Table 7)"
    lambda0 = number(DEFAULT_CONFIG, "algorithm.lambda0")
    numbers: list[str] = []
    notes: list[str] = []
    verdicts = []
    settings = dict.fromkeys(setting for block in evidence.plan.blocks for setting in evidence.plan.settings(block))
    for env, scale in settings:
        cell = evidence.cells[evidence.plan.cell(report_blocks().main.default(), env, scale)]
        if cell.n == 0:
            continue
        rows = evidence.diagnostics.loc[evidence.diagnostics["run_id"].isin(cell.run_ids)]
        for metric, check in (("diag/lambda_mean", _equals(lambda0)), ("diag/clamp_frac", _below(CLAMP_LIMIT))):
            values = rows.loc[rows["metric"] == metric, "value"].to_numpy()
            name = f"{metric} {env}/{scale}"
            if values.size < cell.expected_seeds:
                notes.append(f"{name} logged by {values.size} of {cell.expected_seeds} seeds")
                verdicts.append(MISSING)
                continue
            half = basic.half_width([basic.seed_level(values)], values.size)  # t interval; NaN with one seed
            low, high = values.mean() - half, values.mean() + half
            verdicts.append(check(low, high))  # NaN bounds decide nothing: inconclusive
            shown = (
                "(n=1; no interval with one seed)" if math.isnan(half) else f"[{low:.4f}, {high:.4f}] (n={values.size})"
            )
            numbers.append(f"{name}: {values.mean():.4f} {shown} → {verdicts[-1]}")
    if not verdicts:
        notes.append("no GACA run with diagnostics")
    return Claim(statement, combine(verdicts), numbers, notes)


def _equals(target: float) -> Callable[[float, float], str]:
    def check(low: float, high: float) -> str:
        if target - LAMBDA_TOLERANCE <= low and high <= target + LAMBDA_TOLERANCE:
            return HOLDS
        outside = low > target + LAMBDA_TOLERANCE or high < target - LAMBDA_TOLERANCE
        return CONTRADICTED if outside else INCONCLUSIVE

    return check


def _below(limit: float) -> Callable[[float, float], str]:
    def check(low: float, high: float) -> str:
        if high < limit:
            return HOLDS
        return CONTRADICTED if low >= limit else INCONCLUSIVE

    return check


CLAIMS: Mapping[str, tuple[tuple[str, ...], Callable[[Evidence], Claim]]] = {
    "detector order": (("detector",), detector_order),
    "no fixed lambda0 matches": (("lambda0",), no_fixed_lambda0_matches),
    "lambda0 sweep concave": (("lambda0",), lambda0_concave),
    "modulation gives back": (("modulation",), modulation_gives_back),
    "alpha_c does not help": (("alpha_c",), alpha_c_does_not_help),
    "gaca > gigpo > grpo": (("main",), main_order),
    "gate in linear regime": ((), gate_in_linear_regime),
}
"""Each claim with the blocks it needs; a claim is checked when all of them are requested."""


def check(evidence: Evidence) -> list[Claim]:
    requested = {block.name for block in evidence.plan.blocks}
    return [claim(evidence) for needs, claim in CLAIMS.values() if set(needs) <= requested]
