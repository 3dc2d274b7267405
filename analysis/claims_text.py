"""The checked claims as text: claims.md (the verdict rule, the verdicts, each comparison's power and
numbers, the sample efficiency) and the booktabs tables of report.tex (``analysis.paper_claims``
decides the verdicts; ``analysis.latex`` holds the LaTeX helpers)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from analysis import stats
from analysis.latex import escape
from analysis.paper_claims import ALPHA_POINTS, MARGIN_POINTS, Claim
from gaca.estimators.registry import estimator_label

VERDICT_RULE = f"""\
Verdict rule. Every comparison is a test of the mean of its per-seed differences a - b (paired by
seed; cells that share no seed, the k-th seed of each), which lie in [-1, 1] whatever shape the runs'
outcomes take (learning or collapsing included): a test by betting (Waudby-Smith and Ramdas 2023,
docs/sequential.md) that keeps its level for any bounded outcomes and at every seed count. A claim
of k comparisons tests each at {ALPHA_POINTS:g}% / k (Bonferroni), so the chance that any of its
parts is decided falsely is at most {ALPHA_POINTS:g}%; the claims of a block are not corrected
against each other (each claim keeps its own {ALPHA_POINTS:g}%).

- "a > b" **holds** when "a - b > 0" is shown at {ALPHA_POINTS / 2:g}% / k, is **contradicted** when
  "a - b < 0" is, is **equivalent** when both "a - b > -{MARGIN_POINTS:g} pts" and "a - b <
  +{MARGIN_POINTS:g} pts" are shown, each at {ALPHA_POINTS:g}% / k (two one-sided tests, TOST), and
  is otherwise **inconclusive**; the interval shown is the 1 - {ALPHA_POINTS:g}% / k interval of
  the same test.
- "a does not improve on b" (alpha_c) **holds** when "the gain is below +{MARGIN_POINTS:g} pts" is
  shown at {ALPHA_POINTS:g}% / k (one one-sided test; the line adds whether the variants are also
  equivalent within ±{MARGIN_POINTS:g} by TOST, or a is worse), is **contradicted** when "the gain
  is above +{MARGIN_POINTS:g} pts" is shown, and is otherwise inconclusive.
- **missing runs**: a cell it needs has no runs, or lacks a seed that its block ran for other cells.

A claim is contradicted if any part is, holds if all hold, is equivalent only if all its parts are,
and is otherwise inconclusive (or missing runs). The lambda0 sweep is concave with an interior
optimum when its middle point beats both endpoints (two comparisons).

With few seeds this test decides only large differences: with 15 seeds that all show the same gain
d, "a > b" holds once d is about 28 points, and "does not help" or "equivalent" within
±{MARGIN_POINTS:g} points need about 99 seeds; no test that is valid for every shape of bounded
outcomes can do better (docs/sequential.md). P(a > b) is the fraction of seed pairs in which a
scored higher (ties half; rliable's probability of improvement), with the one-sided exact
Mann-Whitney p of that ranking; it is not the probability that a is the better method. The power
lines are those of a t test with the measured seed- and task-level variance (it assumes normal seed
means, so it is what the verdicts' test can reach at best).

A block run with `gaca sweep BLOCK --until-decided` is judged by the same tests read after each of
its rounds (its design is stated above the table when its runs carry one): each comparison keeps
the verdict of the first look that showed one."""


ONE_SEED_POWER = "n/a: one seed has no seed-level variance; a second seed gives the power line."


def power_rows(claims: Sequence[Claim]) -> list[tuple[int, str, str, int, str, list[str]]]:
    """Per comparison behind a verdict: claim number, ``a − b``, pairing, seeds, the minimum
    detectable effect in points, and the seeds each ``stats.DETECTION_TARGETS`` needs."""
    rows = []
    for number, claim in enumerate(claims, 1):
        for name, comparison in claim.comparisons:
            effect = comparison.minimum_detectable_effect
            needed = [comparison.seeds_needed(target) for target in stats.DETECTION_TARGETS]
            rows.append(
                (
                    number,
                    name,
                    comparison.pairing,
                    comparison.seeds,
                    "n/a" if math.isnan(effect) else f"{100 * effect:.1f}",
                    ["n/a" if n is None else str(n) for n in needed],
                )
            )
    return rows


def _one_seed(rows: Sequence[tuple[int, str, str, int, str, list[str]]]) -> bool:
    """Whether a ``power_rows`` row has one seed (its power is n/a: ``ONE_SEED_POWER``)."""
    return any(seeds < 2 for _, _, _, seeds, _, _ in rows)


def _target_headings() -> list[str]:
    return [f"seeds, {100 * target:g} pts" for target in stats.DETECTION_TARGETS]


def markdown(claims: Sequence[Claim], header: Sequence[str], efficiency: pd.DataFrame | None) -> str:
    """claims.md: a verdict table, the power of every comparison, each claim's numbers, then the
    sample-efficiency numbers."""
    lines = ["# The paper's claims, checked on the runs", "", *header, "", VERDICT_RULE, ""]
    lines += ["| # | Claim | Verdict |", "| --- | --- | --- |"]
    lines += [f"| {i} | {claim.statement} | **{claim.verdict}** |" for i, claim in enumerate(claims, 1)]
    rows = power_rows(claims)
    if rows:
        lines += [
            "",
            "## Power of each comparison",
            "",
            "Smallest difference detected at 80% power (two-sided alpha 0.05) with the seeds at hand, and the "
            "seeds per cell a 3- and a 5-point difference need, from the measured variance (power of the t test, "
            "which assumes normal seed means: the verdicts' test, valid for any bounded outcomes, needs more; "
            "see the verdict rule).",
            "",
            "| # | Comparison | Pairing | Seeds | Detectable (pts) | " + " | ".join(_target_headings()) + " |",
            "| --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in stats.DETECTION_TARGETS) + " |",
        ]
        lines += [
            f"| {n} | {name} | {pairing} | {seeds} | {effect} | " + " | ".join(needed) + " |"
            for n, name, pairing, seeds, effect, needed in rows
        ]
        if _one_seed(rows):
            lines += ["", ONE_SEED_POWER]
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
                f"| {row.env}/{row.scale} | {100 * row.target:.2f} | {estimator_label(row.method)} | {reached} |"
            )
    return "\n".join(lines) + "\n"


CAPTION = (
    "Each comparison is a test by betting of the mean per-seed difference, valid for bounded outcomes of any "
    f"shape; a claim of k comparisons tests each at {ALPHA_POINTS:g}%/k (Bonferroni), so any false decision "
    f"among its parts has probability at most {ALPHA_POINTS:g}%; the claims of a block are not corrected against "
    "each other. Holds / contradicted: a > b / a < b shown; equivalent: all parts inside "
    f'±{MARGIN_POINTS:g} points by two one-sided tests; "does not help": a gain below +{MARGIN_POINTS:g} points '
    "shown; inconclusive: none shown."
)
"""The verdict rule in one caption (claims.md states it in full, ``VERDICT_RULE``)."""
SEQUENTIAL_VERDICTS = (
    "A block run until decided takes each comparison's verdict from the first of its rounds that showed one (its "
    "design is stated with the data)."
)


def latex_table(claims: Sequence[Claim], sequential: bool = False) -> str:
    """The verdicts, then the power of each comparison, as booktabs tables for report.tex;
    ``sequential``: some block's verdicts are its sequential design's."""
    rows = [rf"{i} & {escape(claim.statement)} & \textbf{{{claim.verdict}}} \\" for i, claim in enumerate(claims, 1)]
    lines = [
        r"\begin{table}[H]",
        r"\centering",
        r"\small",
        r"\caption*{The paper's qualitative claims checked on the runs (numbers and intervals in claims.md). "
        + escape(CAPTION)
        + (" " + escape(SEQUENTIAL_VERDICTS) if sequential else "")
        + "}",
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
    power = power_rows(claims)
    if power:
        headings = " & ".join(escape(heading) for heading in _target_headings())
        lines += [
            r"\begin{table}[H]",
            r"\centering",
            r"\small",
            r"\caption*{Power of each comparison behind a verdict: the smallest difference detected at 80\% power "
            r"(two-sided $\alpha = 0.05$) with the seeds at hand, and the seeds per cell a 3- and a 5-point "
            r"difference need, from the measured seed- and task-level variance (power of the t test, which "
            r"assumes normal seed means; the verdicts' test needs more).}",
            r"\footnotesize",
            r"\begin{tabular}{rp{0.36\linewidth}lrr" + "r" * len(stats.DETECTION_TARGETS) + "}",
            r"\toprule",
            rf"\# & Comparison & Pairing & Seeds & Detects (pts) & {headings} \\",
            r"\midrule",
            *(
                rf"{n} & {escape(name)} & {escape(pairing.removeprefix('paired by '))} & {seeds} & {effect} & "
                rf"{' & '.join(needed)} \\"
                for n, name, pairing, seeds, effect, needed in power
            ),
            r"\bottomrule",
            r"\end{tabular}",
            *([r"\par " + escape(ONE_SEED_POWER)] if _one_seed(power) else []),
            r"\end{table}",
            "",
        ]
    return "\n".join(lines)
