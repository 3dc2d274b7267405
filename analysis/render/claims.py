"""The checked claims as text: claims.md (the verdict rule, the verdicts, each comparison's power and
numbers, the sample efficiency) and the booktabs tables of report.tex (``analysis.claims.checks``
decides the verdicts; ``analysis.render.latex`` holds the LaTeX helpers)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from analysis.claims.checks import ALPHA_POINTS, MARGIN_POINTS, Claim
from analysis.render.latex import escape
from analysis.stats import basic
from analysis.stats.sequential import ASSUMPTIONS, DEFAULT_ASSUME, NONE, SHARP_NULL, SHIFT
from gaca.estimators.registry import estimator_label


def verdict_rule(assume: str = DEFAULT_ASSUME) -> str:
    """The verdict rule printed at the top of claims.md, with the assumption ``assume`` of its
    "equivalent" and "does not help" verdicts."""
    other = NONE if assume == SHIFT else SHIFT
    return f"""\
Verdict rule. Every comparison reads its per-seed differences a - b (paired by seed; cells that share no
seed, the k-th seed of each). A claim of k comparisons tests each at {ALPHA_POINTS:g}% / k (Bonferroni),
so the chance that any of its parts is decided falsely is at most {ALPHA_POINTS:g}%; the claims of a
block are not corrected against each other (each keeps its own {ALPHA_POINTS:g}%).

- "a > b" **holds** when an exact sign-flip test shows the differences lean positive at
  {ALPHA_POINTS / 2:g}% / k, and is **contradicted** when it shows them lean negative. It rests on
  Fisher's sharp null: when the estimator makes no difference the two runs of a seed (same start,
  tasks and draws) are exchangeable, so each difference is as likely either sign, and the test is exact
  at any seed count and for any outcome shape. Read as a gain in the *mean* it assumes a shift (a = b
  plus a constant, symmetric noise): arms of different shape with equal means are told apart in one
  direction or the other more often than the level. The interval shown beside it is the same test
  inverted (the shifts it keeps); the any-shape interval for the mean (betting, no assumption) and
  P(a > b), the share of paired seeds a wins (ties half) with its exact sign-test interval, are given
  beside it and decide nothing.
- "a > b" is **equivalent** when "a - b > -{MARGIN_POINTS:g} pts" and "a - b < +{MARGIN_POINTS:g} pts"
  are both shown, each at {ALPHA_POINTS:g}% / k (two one-sided tests, TOST); "a does not improve on b"
  (alpha_c) **holds** when "the gain is below +{MARGIN_POINTS:g} pts" is shown at {ALPHA_POINTS:g}% / k
  (the line adds whether the variants are also equivalent by TOST, or a is worse) and is
  **contradicted** when "the gain is above +{MARGIN_POINTS:g} pts" is. These verdicts {ASSUMPTIONS[assume]}
  (`--assume {assume}`; `--assume {other}`: {ASSUMPTIONS[other]}).{SHIFT_CAVEAT if assume == SHIFT else NONE_CAVEAT}
- **inconclusive**: nothing shown; **missing runs**: a cell it needs has no runs, or lacks a seed that its
  block ran for other cells.

No exact test shows a side below 2^-n with n seeds: 5 seeds cannot reach 2.5% (2^-5 = 3.1%), and with k
comparisons in a claim more are needed (8 seeds for 5 parts); such a comparison says "not tested" in one
line. The paper's three seeds per cell decide nothing at {ALPHA_POINTS:g}% by any exact test (2^-3 =
12.5%). A claim is contradicted if any part is, holds if all hold, is equivalent only if all its parts
are, and is otherwise inconclusive (or missing runs). The lambda0 sweep is concave with an interior
optimum when its middle point beats both endpoints (two comparisons). The power lines are those of a t
test with the measured seed- and task-level variance; under a shift with normal noise the sign-flip test
needs about as many seeds (and at least the fewest above).

A block run with `gaca sweep BLOCK --until-decided` is judged by the group-sequential version of the same
tests at its looks (its design is stated above the table when its runs carry one): each comparison keeps
the verdict of the first look that showed one."""


SHIFT_CAVEAT = (
    " Where one arm's gain is a few seeds that learn while most seeds of both arms agree, the shift model "
    "is wrong: such a gain can read as equivalent far more often than the level (docs/sequential.md)."
)
NONE_CAVEAT = (
    " Valid for any bounded outcomes, they need some 55-99 seeds to decide anything within "
    f"±{MARGIN_POINTS:g} points (docs/sequential.md)."
)
ONE_SEED_POWER = "n/a: one seed has no seed-level variance; a second seed gives the power line."


def power_rows(claims: Sequence[Claim]) -> list[tuple[int, str, str, int, str, list[str]]]:
    """Per comparison behind a verdict: claim number, ``a − b``, pairing, seeds, the minimum
    detectable effect in points, and the seeds each ``basic.DETECTION_TARGETS`` needs."""
    rows = []
    for number, claim in enumerate(claims, 1):
        for name, comparison in claim.comparisons:
            effect = comparison.minimum_detectable_effect
            needed = [comparison.seeds_needed(target) for target in basic.DETECTION_TARGETS]
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
    return [f"seeds, {100 * target:g} pts" for target in basic.DETECTION_TARGETS]


def markdown(
    claims: Sequence[Claim], header: Sequence[str], efficiency: pd.DataFrame | None, assume: str = DEFAULT_ASSUME
) -> str:
    """claims.md: a verdict table, the power of every comparison, each claim's numbers, then the
    sample-efficiency numbers."""
    lines = ["# The paper's claims, checked on the runs", "", *header, "", verdict_rule(assume), ""]
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
            "which assumes normal seed means; the sign-flip test needs about as many under a shift with normal "
            "noise, and never fewer than the verdict rule's minimum).",
            "",
            "| # | Comparison | Pairing | Seeds | Detectable (pts) | " + " | ".join(_target_headings()) + " |",
            "| --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in basic.DETECTION_TARGETS) + " |",
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


def caption(assume: str = DEFAULT_ASSUME) -> str:
    """The verdict rule in one caption (claims.md states it in full, ``verdict_rule``)."""
    return (
        "Holds / contradicted: a > b / a < b shown by an exact sign-flip test of the per-seed differences "
        f"({SHARP_NULL}); "
        f"a claim of k comparisons tests each at {ALPHA_POINTS:g}%/k (Bonferroni), so any false decision among its "
        f"parts has probability at most {ALPHA_POINTS:g}%; the claims of a block are not corrected against each other. "
        f'Equivalent: all parts inside ±{MARGIN_POINTS:g} points by two one-sided tests; "does not help": a gain '
        f"below +{MARGIN_POINTS:g} points shown; both {ASSUMPTIONS[assume]}. Inconclusive: none shown; "
        "with 5 or fewer seeds no exact test reaches 2.5% a side (its smallest p, one sign pattern in 2 to the "
        "n, is larger)."
    )


SEQUENTIAL_VERDICTS = (
    "A block run until decided takes each comparison's verdict from the first of its rounds that showed one (its "
    "design is stated with the data)."
)


def latex_table(claims: Sequence[Claim], sequential: bool = False, assume: str = DEFAULT_ASSUME) -> str:
    """The verdicts, then the power of each comparison, as booktabs tables for report.tex;
    ``sequential``: some block's verdicts are its sequential design's."""
    rows = [rf"{i} & {escape(claim.statement)} & \textbf{{{claim.verdict}}} \\" for i, claim in enumerate(claims, 1)]
    lines = [
        r"\begin{table}[H]",
        r"\centering",
        r"\small",
        r"\caption*{The paper's qualitative claims checked on the runs (numbers and intervals in claims.md). "
        + escape(caption(assume))
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
            r"assumes normal seed means; the sign-flip test needs about as many under a shift with normal noise).}",
            r"\footnotesize",
            r"\begin{tabular}{rp{0.36\linewidth}lrr" + "r" * len(basic.DETECTION_TARGETS) + "}",
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
