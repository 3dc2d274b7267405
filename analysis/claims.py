"""The paper's qualitative claims (Section 4), each checked on the runs with its numbers, a 95%
interval and a verdict (the rule is ``VERDICT_RULE``, also printed at the top of claims.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from analysis import stats
from analysis.blocks import DEFAULT_CONFIG, MAIN, METHOD_LABELS, Block, Variant, get_block
from analysis.cells import CellKey, CellResult, Comparison, Plan, compare
from analysis.latex import escape

HOLDS, FAILS, NOT_ENOUGH = "holds", "fails", "not enough data"
VERDICT_RULE = """\
Verdict rule for a claim "a > b" (every claim is one or more of these):

- **not enough data**: a cell it needs has fewer seeds than expected, or none; or the difference
  has the claimed sign but its 95% interval includes zero (more seeds would decide);
- **holds**: the 95% interval of a - b lies above zero;
- **fails**: the mean difference has the wrong sign (or is zero).

A claim made of several comparisons fails if any fails, holds if all hold, and otherwise lacks
data. "Does not help" (alpha_c) is the reverse test: it fails only when the interval of the gain
lies above zero, and holds when the mean gain is not positive. Intervals: bootstrap over seeds,
then over evaluation tasks within each seed (over seeds only where per-task outcomes are missing)."""
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
    """One line per cell or per comparison, e.g. ``uniform - random: +4.51 pts [+1.20, +7.90], P = 1.00``."""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Evidence:
    """What the claims are checked on."""

    plan: Plan
    cells: Mapping[CellKey, CellResult]
    diagnostics: pd.DataFrame
    """``cells.diagnostics`` of GACA's main cells: env, scale, run_id, seed, metric, value."""

    def cell(self, block: Block, variant: Variant) -> CellResult:
        env, scale = self.plan.settings(block)[0]
        return self.cells[self.plan.cell(variant, env, scale)]


def combine(verdicts: Sequence[str]) -> str:
    if not verdicts:
        return NOT_ENOUGH
    if FAILS in verdicts:
        return FAILS
    return NOT_ENOUGH if NOT_ENOUGH in verdicts else HOLDS


def greater(comparison: Comparison) -> str:
    """Verdict on "a > b" from ``compare(a, b)``."""
    if comparison.estimate <= 0:
        return FAILS
    return HOLDS if comparison.low > 0 else NOT_ENOUGH


def not_better(comparison: Comparison) -> str:
    """Verdict on "a does not improve on b" from ``compare(a, b)``."""
    if comparison.low > 0:
        return FAILS
    return HOLDS if comparison.estimate <= 0 else NOT_ENOUGH


def describe(result: CellResult, name: str) -> str:
    if result.n == 0:
        return f"{name}: not run"
    std = "" if math.isnan(result.std) else f" ± {100 * result.std:.2f}"
    low, high = result.interval()
    interval = "" if math.isnan(low) else f" [{100 * low:.2f}, {100 * high:.2f}]"
    return f"{name}: {100 * result.mean:.2f}{std}{interval} (n={result.n} of {result.expected_seeds})"


def describe_comparison(comparison: Comparison, a: str, b: str, verdict: str) -> str:
    return (
        f"{a} − {b}: {100 * comparison.estimate:+.2f} pts [{100 * comparison.low:+.2f}, {100 * comparison.high:+.2f}], "
        f"P({a} > {b}) = {comparison.probability_of_improvement:.2f} → {verdict}"
    )


def _missing(named: Sequence[tuple[str, CellResult]]) -> list[str]:
    return [f"{name} has {result.n} of {result.expected_seeds} seeds" for name, result in named if not result.complete]


def ordered(statement: str, named: Sequence[tuple[str, CellResult]]) -> Claim:
    """``named[0] < named[1] < ...``: each consecutive pair must increase."""
    numbers = [describe(result, name) for name, result in named]
    missing = _missing(named)
    if missing:
        return Claim(statement, NOT_ENOUGH, numbers, missing)
    verdicts = []
    for (low_name, low), (high_name, high) in zip(named, named[1:]):
        comparison = compare(high, low)
        verdicts.append(greater(comparison))
        numbers.append(describe_comparison(comparison, high_name, low_name, verdicts[-1]))
    return Claim(statement, combine(verdicts), numbers)


def detector_order(evidence: Evidence) -> Claim:
    block = get_block("detector")
    named = [(name, evidence.cell(block, block.variant(name))) for name in ("random", "uniform", "entropy")]
    return ordered("Detector: random < uniform < entropy (Section 4.3)", named)


def _sweep(evidence: Evidence) -> tuple[list[tuple[float, str, CellResult]], CellResult]:
    block = get_block("lambda0")
    points = [
        (float(v.overrides["algorithm.lambda0"]), v.name, evidence.cell(block, v))
        for v in block.variants
        if v.overrides.get("algorithm.alpha_lambda") == 0.0
    ]
    return points, evidence.cell(block, block.variant("gaca"))


def _present(points: list[tuple[float, str, CellResult]]) -> tuple[list[tuple[float, str, CellResult]], list[str]]:
    """Sweep points that were run; a point never run is left out (and noted), a partial one is kept."""
    present = sorted((point for point in points if point[2].n > 0), key=lambda point: point[0])
    notes = [f"{name} was not run; the sweep is read without it" for _, name, result in points if result.n == 0]
    return present, notes


def no_fixed_lambda0_matches(evidence: Evidence) -> Claim:
    statement = "No fixed lambda0 (modulation off) matches the adaptive gate (Section 4.3)"
    points, adaptive = _sweep(evidence)
    present, notes = _present(points)
    numbers = [describe(adaptive, "adaptive")] + [describe(result, name) for _, name, result in present]
    missing = _missing([("adaptive", adaptive)] + [(name, result) for _, name, result in present])
    if missing or not present:
        return Claim(statement, NOT_ENOUGH, numbers, notes + missing + ([] if present else ["no sweep point was run"]))
    verdicts = []
    for _, name, result in present:
        comparison = compare(adaptive, result)
        verdicts.append(greater(comparison))
        numbers.append(describe_comparison(comparison, "adaptive", name, verdicts[-1]))
    return Claim(statement, combine(verdicts), numbers, notes)


def lambda0_concave(evidence: Evidence) -> Claim:
    statement = "The lambda0 sweep (modulation off) is concave with an interior optimum (Figure 2c)"
    points, _ = _sweep(evidence)
    present, notes = _present(points)
    numbers = [describe(result, name) for _, name, result in present]
    missing = _missing([(name, result) for _, name, result in present])
    if missing:
        return Claim(statement, NOT_ENOUGH, numbers, notes + missing)
    lambdas = [x for x, _, _ in present]
    if len(present) < 3 or lambdas[0] != 0.0 or lambdas[-1] != 1.0:
        return Claim(
            statement, NOT_ENOUGH, numbers, notes + ["needs both endpoints (lambda0 = 0 and 1) and an interior point"]
        )
    means = np.array([result.mean for _, _, result in present])
    slopes = np.diff(means) / np.diff(lambdas)
    concave = bool(np.all(np.diff(slopes) <= 1e-12))
    numbers.append(
        "slopes between neighbours (points per unit of lambda0): " + ", ".join(f"{100 * s:+.1f}" for s in slopes)
    )
    best = int(np.argmax(means))
    if best in (0, len(present) - 1):
        numbers.append(f"optimum at the endpoint {present[best][1]}")
        return Claim(statement, FAILS, numbers, notes)
    verdicts = [HOLDS if concave else FAILS]
    if not concave:
        notes.append("the slopes do not decrease monotonically: not concave")
    for index in (0, len(present) - 1):
        comparison = compare(present[best][2], present[index][2])
        verdicts.append(greater(comparison))
        numbers.append(describe_comparison(comparison, present[best][1], present[index][1], verdicts[-1]))
    return Claim(statement, combine(verdicts), numbers, notes)


def modulation_gives_back(evidence: Evidence) -> Claim:
    block = get_block("modulation")
    named = [(v.name, evidence.cell(block, v)) for v in block.variants]  # 0, 0.5, 1.0
    statement = "Modulation 1.0 gives back part of 0.5's gain: m(0) < m(1.0) < m(0.5) (Section 4.3)"
    numbers = [describe(result, name) for name, result in named]
    missing = _missing(named)
    if missing:
        return Claim(statement, NOT_ENOUGH, numbers, missing)
    (off_name, off), (half_name, half), (full_name, full) = named
    verdicts = []
    for a_name, a, b_name, b in ((half_name, half, full_name, full), (full_name, full, off_name, off)):
        comparison = compare(a, b)
        verdicts.append(greater(comparison))
        numbers.append(describe_comparison(comparison, a_name, b_name, verdicts[-1]))
    return Claim(statement, combine(verdicts), numbers)


def alpha_c_does_not_help(evidence: Evidence) -> Claim:
    block = get_block("alpha_c")
    pure = block.variant("alpha_c=1")
    fused = [v for v in block.variants if v is not pure]
    statement = "alpha_c < 1 does not help with a sparse reward (Section 4.3)"
    named = [(pure.name, evidence.cell(block, pure))] + [(v.name, evidence.cell(block, v)) for v in fused]
    numbers = [describe(result, name) for name, result in named]
    missing = _missing(named)
    if missing:
        return Claim(statement, NOT_ENOUGH, numbers, missing)
    verdicts = []
    for name, result in named[1:]:
        comparison = compare(result, named[0][1])
        verdicts.append(not_better(comparison))
        numbers.append(describe_comparison(comparison, name, pure.name, verdicts[-1]))
    return Claim(statement, combine(verdicts), numbers)


def main_order(evidence: Evidence) -> Claim:
    statement = "GACA > GiGPO > GRPO in every setting (Table 1)"
    numbers: list[str] = []
    notes: list[str] = []
    verdicts = []
    for env, scale in evidence.plan.settings(MAIN):
        named = [
            (f"{METHOD_LABELS[m]} {env}/{scale}", evidence.cells[evidence.plan.cell(MAIN.variant(m), env, scale)])
            for m in ("grpo", "gigpo", "gaca")
        ]
        if all(result.n == 0 for _, result in named):
            continue
        claim = ordered(statement, named)
        numbers += claim.numbers
        notes += claim.notes
        verdicts.append(claim.verdict)
    if not verdicts:
        notes.append("no setting has runs")
    return Claim(statement, combine(verdicts), numbers, notes)


def gate_in_linear_regime(evidence: Evidence) -> Claim:
    statement = "The mean lambda equals lambda0 and under 1% of steps sit at a clamp (Section 4.4, Table 7)"
    lambda0 = float(DEFAULT_CONFIG["algorithm.lambda0"])
    numbers: list[str] = []
    notes: list[str] = []
    verdicts = []
    rng = np.random.default_rng(0)
    for env, scale in evidence.plan.settings(MAIN):
        cell = evidence.cells[evidence.plan.cell(MAIN.variant("gaca"), env, scale)]
        if cell.n == 0:
            continue
        rows = evidence.diagnostics.loc[(evidence.diagnostics["env"] == env) & (evidence.diagnostics["scale"] == scale)]
        for metric, check in (("diag/lambda_mean", _equals(lambda0)), ("diag/clamp_frac", _below(CLAMP_LIMIT))):
            values = rows.loc[rows["metric"] == metric, "value"].to_numpy()
            name = f"{metric} {env}/{scale}"
            if values.size < cell.expected_seeds:
                notes.append(f"{name} logged by {values.size} of {cell.expected_seeds} seeds")
                verdicts.append(NOT_ENOUGH)
                continue
            low, high = stats.percentile_interval(stats.seed_bootstrap(values, rng))
            verdicts.append(check(values.mean(), low, high))
            numbers.append(f"{name}: {values.mean():.4f} [{low:.4f}, {high:.4f}] (n={values.size}) → {verdicts[-1]}")
    if not verdicts:
        notes.append("no GACA run with diagnostics")
    return Claim(statement, combine(verdicts), numbers, notes)


def _equals(target: float) -> Callable[[float, float, float], str]:
    def check(mean: float, low: float, high: float) -> str:
        if abs(mean - target) > LAMBDA_TOLERANCE:
            return FAILS
        inside = target - LAMBDA_TOLERANCE <= low and high <= target + LAMBDA_TOLERANCE
        return HOLDS if inside else NOT_ENOUGH

    return check


def _below(limit: float) -> Callable[[float, float, float], str]:
    def check(mean: float, low: float, high: float) -> str:
        if mean >= limit:
            return FAILS
        return HOLDS if high < limit else NOT_ENOUGH

    return check


CLAIMS: Mapping[str, tuple[tuple[str, ...], Callable[[Evidence], Claim]]] = {
    "detector order": (("detector",), detector_order),
    "no fixed lambda0 matches": (("lambda0",), no_fixed_lambda0_matches),
    "lambda0 sweep concave": (("lambda0",), lambda0_concave),
    "modulation gives back": (("modulation",), modulation_gives_back),
    "alpha_c does not help": (("alpha_c",), alpha_c_does_not_help),
    "gaca > gigpo > grpo": (("main",), main_order),
    "gate in linear regime": (("main",), gate_in_linear_regime),
}
"""Each claim with the blocks it needs; a claim is checked when all of them are requested."""


def check(evidence: Evidence) -> list[Claim]:
    requested = {block.name for block in evidence.plan.blocks}
    return [claim(evidence) for needs, claim in CLAIMS.values() if set(needs) <= requested]


def markdown(claims: Sequence[Claim], header: Sequence[str], efficiency: pd.DataFrame | None) -> str:
    """claims.md: a verdict table, then each claim's numbers, then the sample-efficiency numbers."""
    lines = ["# The paper's claims, checked on the runs", "", *header, "", VERDICT_RULE, ""]
    lines += ["| # | Claim | Verdict |", "| --- | --- | --- |"]
    lines += [f"| {i} | {claim.statement} | **{claim.verdict}** |" for i, claim in enumerate(claims, 1)]
    for i, claim in enumerate(claims, 1):
        lines += ["", f"## {i}. {claim.statement}", "", f"Verdict: **{claim.verdict}**", ""]
        lines += [f"- {line}" for line in claim.numbers]
        lines += [f"- note: {note}" for note in claim.notes]
    if efficiency is not None and not efficiency.empty:
        lines += [
            "",
            "## Sample efficiency (no verdict)",
            "",
            "Iterations the seed-mean evaluation curve needs to reach GiGPO's peak:",
            "",
        ]
        lines += ["| Setting | GiGPO's peak (%) | Method | Iterations |", "| --- | --- | --- | --- |"]
        for row in efficiency.itertuples(index=False):
            reached = "not reached" if math.isnan(row.iterations) else f"{row.iterations:g}"
            lines.append(
                f"| {row.env}/{row.scale} | {100 * row.target:.2f} | {METHOD_LABELS[row.method]} | {reached} |"
            )
    return "\n".join(lines) + "\n"


def latex_table(claims: Sequence[Claim]) -> str:
    """The verdicts as a booktabs table for report.tex."""
    rows = [rf"{i} & {escape(claim.statement)} & \textbf{{{claim.verdict}}} \\" for i, claim in enumerate(claims, 1)]
    return "\n".join(
        [
            r"\begin{table}[H]",
            r"\centering",
            r"\small",
            r"\caption*{The paper's qualitative claims checked on the runs (numbers and intervals in claims.md).}",
            r"\begin{tabular}{rp{0.68\linewidth}l}",
            r"\toprule",
            r"\# & Claim & Verdict \\",
            r"\midrule",
            *rows,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
            "",
        ]
    )
