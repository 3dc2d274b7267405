"""``gaca report [BLOCK ...]``: read the runs from MLflow and write the paper's tables, figures,
claims check and ``report.tex`` (compiled to ``report.pdf`` when LaTeX is installed).

    gaca report                          # every block, final evaluation, into reports/
    gaca report detector lambda0 --selection best --out reports-best
    gaca report main --tracking-uri http://127.0.0.1:5000 --experiment gaca --no-pdf

Prints a summary: runs used and excluded (with reasons), partial and missing cells, skipped
figures, files written, time. The same lines head report.tex; ``runs.csv`` lists every run.
Exit status: 0 done, 1 no run fills any requested cell or the PDF failed, 2 usage or experiment.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
from mlflow.tracking import MlflowClient

from analysis.claims import checks, replay
from analysis.render import claims as claims_text
from analysis.render import figures, horizon, latex, tables
from analysis.runs import cells, collect
from analysis.runs.blocks import Block, environment_label, report_blocks, run_beside, scale_label
from analysis.runs.cells import CellKey, CellResult, Plan
from analysis.runs.where import check_keys, parse_where, pinned
from analysis.stats import sequential
from gaca.estimators.registry import ESTIMATORS


@dataclass(frozen=True)
class FigureSpec:
    """A figure the requested blocks ask for: its file stem, name and caption in report.tex, why it
    is left out when its data is missing, and the call that draws it (returns [] then)."""

    stem: str
    name: str
    caption: str
    missing: str
    draw: Callable[[], list[Path]]


TABLE_NUMBERS = {"table1_main": 1, "table2_ablations": 2, "table7_diagnostics": 7}
"""The paper's number of each table, kept in report.tex."""
TABLE_MISSING = {
    "table1_main": "no run of the main block",
    "table7_diagnostics": "no GACA run of the requested blocks logged diag/* metrics",
}
BLOCK_FIGURES = ("learning_curves", "seeds", "criticality")
"""Figures drawn for every requested block, named ``{figure}_{block}``."""
SHARED_FIGURES = ("fig2c_lambda0_sweep", "fig3_gate_law", "sample_efficiency")


def block_stem(figure: str, block: Block) -> str:
    return (
        "fig2ab_learning_curves"
        if (figure, block) == ("learning_curves", report_blocks().main)
        else f"{figure}_{block.name}"
    )


def generated() -> list[str]:
    """Every file a report writes under its output folder (removed before a new report writes its own)."""
    return [
        *(f"tables/{stem}.tex" for stem in (*TABLE_NUMBERS, "claims")),
        "tables/cells.csv",
        *(
            f"figures/{stem}.{ext}"
            for stem in (
                *SHARED_FIGURES,
                *(block_stem(f, b) for b in report_blocks().by_name.values() for f in BLOCK_FIGURES),
            )
            for ext in ("pdf", "png")
        ),
        "claims.md",
        "runs.csv",
        "report.tex",
        "report.pdf",
    ]


"""Every file a report may write, relative to --out; removed first so none is left from an earlier report."""


def build_parser() -> argparse.ArgumentParser:
    blocks = report_blocks()
    parser = argparse.ArgumentParser(
        prog="gaca report",
        description="Write the paper's tables, figures and claims check from the runs logged in MLflow.",
    )
    parser.add_argument(
        "blocks", nargs="*", metavar="BLOCK", help=f"blocks to report (default all): {', '.join(blocks.by_name)}"
    )
    parser.add_argument("--out", type=Path, default=Path("reports"), help="output folder (default: reports/)")
    parser.add_argument("--tracking-uri", help="MLflow URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)")
    parser.add_argument("--experiment", default=collect.DEFAULT_EXPERIMENT, help="MLflow experiment (default: gaca)")
    parser.add_argument(
        "--selection",
        choices=cells.SELECTIONS,
        default="final",
        help="final evaluation (default) or the best evaluation so far; the same for every method",
    )
    parser.add_argument(
        "--env",
        help="only this environment (default: all for main; the ablations where most of their runs are, "
        f"{blocks.ablation_environment} when none is)",
    )
    parser.add_argument(
        "--scale",
        help=f"only this scale (default: all for main; the ablations' as --env, {blocks.ablation_scale} when none is)",
    )
    parser.add_argument("--preset", help="only runs of this trainer.preset (default: each setting's most common)")
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only runs with this param value, e.g. trainer.kl_coef=0.1 (repeatable)",
    )
    parser.add_argument(
        "--assume",
        choices=tuple(sequential.ASSUMPTIONS),
        default=sequential.DEFAULT_ASSUME,
        help="what 'equivalent' and 'does not help' assume: shift (sign-flip tests, exact for a shift with "
        f"symmetric noise) or none (betting, any shape; decides nothing below ~55-99 seeds); default "
        f"{sequential.DEFAULT_ASSUME}",
    )
    parser.add_argument("--no-pdf", action="store_true", help="write report.tex but do not compile it")
    return parser


@dataclass(frozen=True)
class Runs:
    """Everything read from MLflow for one report."""

    ledger: pd.DataFrame
    """Every run of the experiment with ``cell``, ``reason`` (None: used), ``score`` and ``iteration``."""
    curves: pd.DataFrame
    results: dict[CellKey, CellResult]
    diagnostics: pd.DataFrame
    histograms: pd.DataFrame
    logged: pd.DataFrame
    """Every run of the experiment as ``collect.load_runs`` reads it."""


def read(
    client: MlflowClient,
    experiment: str,
    plan: Plan,
    selection: str,
    preset: str | None,
    where: Mapping[str, object] | None = None,
) -> tuple[Plan, Runs]:
    """Screen the experiment's runs, apply the selection protocol, and read what the cells need;
    the plan comes back with the ablations' setting taken from where their runs are. ``where``:
    only runs whose params have these values (a key no run logs is a LookupError)."""
    uri = client.tracking_uri
    logged = collect.load_runs(client, experiment)
    check_keys(logged, where or {}, experiment)
    plan = with_runs_beside(plan, logged, preset, where)
    plan = dataclasses.replace(plan, ablations_at=cells.ablation_setting(logged))
    wanted = plan.wanted()
    ledger = cells.screen(logged, wanted, preset, where)
    curves = collect.load_curves(client, list(ledger.loc[ledger["reason"].isna(), "run_id"]))
    ledger = cells.select(ledger, curves, selection)
    used = cells.used(ledger)
    outcomes = collect.load_outcomes(uri, used.loc[:, ["run_id", "artifact_uri", "iteration"]])
    results = cells.results(ledger, outcomes, curves, plan)
    gaca = [results[key] for key in wanted if ESTIMATORS.spec(str(dict(key.config)["algorithm.method"])).gated]
    gaca_runs = used.loc[used["run_id"].isin([run for cell in gaca for run in cell.run_ids])]
    return plan, Runs(
        ledger,
        curves,
        results,
        cells.diagnostics(gaca, curves),
        collect.load_criticality_histograms(uri, gaca_runs),
        logged,
    )


def with_runs_beside(
    plan: Plan, logged: pd.DataFrame, preset: str | None, where: Mapping[str, object] | None = None
) -> Plan:
    """``plan`` with Table 1 given a row for each estimator ``sweeps/main.yaml`` does not list whose
    runs fill a cell of the main block (run with ``gaca sweep main algorithm=...,NAME``), and none
    for one whose runs are elsewhere (an ablation's row, say): a row is added by running it, not by
    registering it."""
    run_beside(())
    plan = _recomposed(plan)
    if report_blocks().main not in plan.blocks or "method" not in logged:
        return plan
    beside = run_beside(tuple(logged["method"].dropna().astype(str)))
    if not beside:
        return plan
    trial = _recomposed(plan)
    main = report_blocks().main
    main_cells = {trial.cell(variant, env, scale) for variant in main.variants for env, scale in trial.settings(main)}
    ledger = cells.screen(logged, trial.wanted(), preset, where)
    filling = set(ledger.loc[ledger["reason"].isna() & ledger["cell"].isin(main_cells), "method"].astype(str))
    run_beside(tuple(method for method in beside if method in filling))
    return _recomposed(plan)


def _recomposed(plan: Plan) -> Plan:
    """``plan`` with its blocks as ``report_blocks`` now reads them."""
    return dataclasses.replace(plan, blocks=tuple(report_blocks().by_name[block.name] for block in plan.blocks))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        args.where = parse_where(args.where)
    except ValueError as error:
        parser.error(str(error))
    blocks = report_blocks().by_name
    unknown = [name for name in args.blocks if name not in blocks and name != horizon.BLOCK]
    if unknown:
        parser.error(f"unknown block(s) {unknown}; known: {', '.join([*blocks, horizon.BLOCK])}")
    if args.blocks == [horizon.BLOCK]:
        return report_horizon(args)
    wants_horizon = not args.blocks or horizon.BLOCK in args.blocks
    args.blocks = [name for name in args.blocks if name != horizon.BLOCK]
    started = time.perf_counter()
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a bar per file would drown the summary
    plan = Plan(tuple(blocks[name] for name in (args.blocks or blocks)), env=args.env, scale=args.scale)
    client = MlflowClient(collect.resolve_tracking_uri(args.tracking_uri))
    try:
        plan, runs = read(client, args.experiment, plan, args.selection, args.preset, args.where)
    except LookupError as error:
        print(f"gaca report: {error}", file=sys.stderr)
        return 2
    read_s = time.perf_counter() - started

    out: Path = args.out
    for name in generated():
        (out / name).unlink(missing_ok=True)
    replays, design_notes = replay.designs(plan, runs.results, runs.ledger, runs.diagnostics)
    design = [line for name, replay in replays.items() for line in replay.design_lines(name)] + design_notes
    written, figures_shown, skipped, checked = write_artifacts(
        plan, runs, args.selection, out, replays, design, args.assume
    )
    summary = summary_lines(args, plan, runs) + design
    tex = out / "report.tex"
    tex.write_text(report_tex(summary, skipped, written, figures_shown, checked, out))
    written.append(tex)
    status, pdf_line = 0, "report.pdf: not built (--no-pdf)"
    if not args.no_pdf:
        try:
            written.append(latex.compile_pdf(tex))
            pdf_line = "report.pdf: built with latexmk"
        except FileNotFoundError as error:
            pdf_line = f"report.pdf: not built: {error}"
        except RuntimeError as error:
            status, pdf_line = 1, f"report.pdf: FAILED: {error}"

    print("\n".join(summary + [f"{line}." for line in skipped]))
    total_s = time.perf_counter() - started
    print(f"read MLflow in {read_s:.1f} s; wrote {len(written)} files under {out}/ in {total_s:.1f} s total")
    print("\n".join(f"  {path}" for path in written))
    print(pdf_line)
    if wants_horizon:
        horizon_written, missing = horizon.write(pinned(runs.logged, args.where, args.experiment), out)
        print(missing or "\n".join(f"  {path}" for path in horizon_written))
    if not any(result.n for result in runs.results.values()):
        print("gaca report: no run fills any requested cell (see the exclusions above)", file=sys.stderr)
        return 1
    return status


def report_horizon(args: argparse.Namespace) -> int:
    """``gaca report horizon``: success against horizon per method (figure and horizon.md)."""
    client = MlflowClient(collect.resolve_tracking_uri(args.tracking_uri))
    try:
        logged = pinned(collect.load_runs(client, args.experiment), args.where, args.experiment)
    except LookupError as error:
        print(f"gaca report: {error}", file=sys.stderr)
        return 2
    written, missing = horizon.write(logged, args.out)
    if missing:
        print(f"gaca report: {missing}", file=sys.stderr)
        return 1
    print((args.out / "horizon.md").read_text())
    print("\n".join(f"  {path}" for path in written))
    return 0


def write_artifacts(
    plan: Plan,
    runs: Runs,
    selection: str,
    out: Path,
    replays: Mapping[str, replay.Replay] | None = None,
    design: Sequence[str] = (),
    assume: str = sequential.DEFAULT_ASSUME,
) -> tuple[list[Path], list[FigureSpec], list[str], list[checks.Claim]]:
    """Tables, figures, claims.md and runs.csv; returns the paths written, the figures drawn, what
    was left out (each with why) and the checked claims. The claims of a block with a sequential
    design (``replays``) take its verdicts, and ``design`` (what the design did) heads claims.md;
    ``assume``: what the fixed-n "equivalent" and "does not help" assume."""
    schedules = {name: replay.schedule for name, replay in (replays or {}).items()}
    written = tables.write_tables(plan, runs.results, runs.diagnostics, selection, out / "tables", schedules)
    skipped = [
        f"Table {TABLE_NUMBERS[stem]}: skipped, {why}"
        for stem, why in TABLE_MISSING.items()
        if (stem != "table1_main" or report_blocks().main in plan.blocks)
        and out / "tables" / f"{stem}.tex" not in written
    ]
    efficiency = (
        figures.sample_efficiency_frame(plan, runs.results, runs.curves)
        if report_blocks().main in plan.blocks
        else None
    )
    shown = []
    for spec in figure_specs(plan, runs, efficiency, out / "figures"):
        paths = spec.draw()
        written += paths
        if paths:
            shown.append(spec)
        else:
            skipped.append(f"{spec.name}: skipped, {spec.missing}")

    checked = checks.check(checks.Evidence(plan, runs.results, runs.diagnostics, assume))
    adjusted = {claim.statement: claim for replay in (replays or {}).values() for claim in replay.claims}
    checked = [adjusted.get(claim.statement, claim) for claim in checked]
    header = _claims_header(plan, runs.results, selection) + list(design)
    (out / "claims.md").write_text(claims_text.markdown(checked, header, efficiency, assume))
    written.append(out / "claims.md")
    if checked:
        table = claims_text.latex_table(checked, sequential=bool(replays), assume=assume)
        (out / "tables" / "claims.tex").write_text(table)
        written.append(out / "tables" / "claims.tex")
    _ledger_frame(runs.ledger, plan).to_csv(out / "runs.csv", index=False)
    written.append(out / "runs.csv")
    return written, shown, skipped, checked


def figure_specs(plan: Plan, runs: Runs, efficiency: pd.DataFrame | None, folder: Path) -> list[FigureSpec]:
    """The figures the requested blocks ask for, in the order the report shows them: each block's
    learning curves, per-seed scores and criticality distribution, then the shared figures."""
    results, curves, histograms = runs.results, runs.curves, runs.histograms
    specs = []
    for block in plan.blocks:
        title = "Figure 2(a, b)" if block is report_blocks().main else f"{block.name}: learning curves"
        specs += [
            FigureSpec(
                block_stem("learning_curves", block),
                title,
                r"Evaluation success against training iteration, mean over seeds with its 95\% $t$ band, "
                rf"every row of the {latex.escape(block.name)} block.",
                f"no run of the {block.name} block has an eval/success_rate history",
                functools.partial(
                    figures.learning_curves, plan, block, results, curves, folder, block_stem("learning_curves", block)
                ),
            ),
            FigureSpec(
                block_stem("seeds", block),
                f"{block.name}: seeds",
                r"Each seed's final success and area under the evaluation curve (dots) beside the row's mean "
                r"(diamond) and 95\% $t$ interval over seeds (never narrower than the task-level one; none with "
                r"one seed).",
                f"no run of the {block.name} block",
                functools.partial(figures.seed_points, plan, block, results, folder, block_stem("seeds", block)),
            ),
            FigureSpec(
                block_stem("criticality", block),
                f"{block.name}: criticality",
                r"Distribution of the criticality score $c$ over training for the GACA rows "
                r"(the histograms of all seeds, summed; a hatched last bin holds every larger $c$).",
                f"no GACA run of the {block.name} block has {collect.CRITICALITY_HISTOGRAM}",
                functools.partial(
                    figures.criticality_distribution,
                    plan,
                    block,
                    results,
                    histograms,
                    folder,
                    block_stem("criticality", block),
                ),
            ),
        ]
    if report_blocks().by_name["lambda0"] in plan.blocks:
        specs.append(
            FigureSpec(
                "fig2c_lambda0_sweep",
                "Figure 2(c)",
                r"Final success against $\lambda_0$ with modulation off (mean $\pm$ std over seeds, each seed's "
                r"point beside it); the star and the dashed line mark the adaptive gate.",
                "no lambda0-sweep or adaptive-gate run",
                lambda: figures.lambda0_sweep(plan, results, folder),
            )
        )
    specs.append(
        FigureSpec(
            "fig3_gate_law",
            "Figure 3",
            r"The gate law $\lambda(c)$ of Eq.~7 for three modulation strengths, "
            r"computed by the estimator's own gate function.",
            "",
            lambda: figures.gate_law(folder),
        )
    )
    if efficiency is not None:
        specs.append(
            FigureSpec(
                "sample_efficiency",
                "Sample efficiency",
                r"Iterations each method's seed-mean evaluation curve needs to reach GiGPO's peak success.",
                "no GiGPO evaluation curve to take the peak from",
                lambda: figures.sample_efficiency(efficiency, folder),
            )
        )
    return specs


def report_tex(
    summary: list[str],
    skipped: list[str],
    written: list[Path],
    shown: list[FigureSpec],
    checked: list[checks.Claim],
    out: Path,
) -> str:
    """report.tex over what was written: the summary, what was left out, the tables under the
    paper's numbers, the claims, the figures."""
    return latex.report_tex(
        title="GACA reproduction: tables, figures and claims",
        summary=[latex.escape(line) for line in summary],
        skipped=[latex.escape(line) for line in skipped],
        tables=[
            (f"tables/{stem}.tex", n) for stem, n in TABLE_NUMBERS.items() if out / "tables" / f"{stem}.tex" in written
        ],
        figures=[latex.Figure(f"figures/{spec.stem}", latex.escape(spec.name), spec.caption) for spec in shown],
        claims="tables/claims.tex" if checked else None,
    )


def _category(reason: str) -> str:
    return reason.split(":", 1)[0]


def summary_lines(args: argparse.Namespace, plan: Plan, runs: Runs) -> list[str]:
    """Plain-text lines: where the runs came from, which were used, which were excluded and why,
    and which cells are partial or empty."""
    ledger, results = runs.ledger, runs.results
    reasons = ledger["reason"].dropna()
    outside = int((reasons == cells.OUTSIDE).sum())
    excluded = reasons[reasons != cells.OUTSIDE]
    filled = sum(1 for result in results.values() if result.n)
    source = _describe_uri(collect.resolve_tracking_uri(args.tracking_uri))
    lines = [
        f"Source: experiment '{args.experiment}' in {source}; selection: {args.selection} evaluation; "
        f"blocks: {', '.join(block.name for block in plan.blocks)}"
        + (f"; only runs with {', '.join(f'{k}={v}' for k, v in args.where.items())}" if args.where else "")
        + ".",
        f"Runs: {len(ledger)} read, {len(ledger) - len(reasons)} used in {filled} of {len(results)} cells, "
        f"{len(excluded)} excluded, {outside} not in the requested tables.",
    ]
    for category, count in Counter(excluded.map(_category)).most_common():
        same = [r.split(": ", 1)[1] for r in excluded if _category(r) == category]
        details = Counter(same if category != "duplicate" else [])  # a duplicate's detail is a run id
        detail = "; ".join(f"{text} x{n}" for text, n in details.most_common(4))
        lines.append(f"Excluded, {category}: {count}" + (f" ({detail})" if detail else "") + ".")
    not_run: dict[str, list[str]] = {}
    for result in sorted(results.values(), key=lambda r: plan.names(r.key)):
        names = ", ".join(plan.names(result.key))
        where = f"{result.key.env}/{result.key.scale}"
        if result.n == 0:
            not_run.setdefault(where, []).append(names)
        elif not result.complete:
            lines.append(
                f"Partial: {names} at {where} has {result.n} of {result.expected_seeds} seeds "
                f"(seeds {', '.join(map(str, result.seeds))}; missing {', '.join(map(str, result.missing_seeds))}); "
                f"marked n={result.n} wherever shown."
            )
        elif result.task_success is None:
            lines.append(f"Seed-level interval: {names} at {where} lacks per-task outcome files.")
    lines += [f"Not run at {where}: {', '.join(names)}." for where, names in sorted(not_run.items())]
    return lines


def _describe_uri(uri: str) -> str:
    """The tracking URI a reader can find again: a local store by its path (relative to the working
    folder when inside it), a server by its address; never a password."""
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https", "databricks", "postgresql", "postgresql+psycopg", "mysql"):
        host = parsed.hostname or ""
        netloc = host + (f":{parsed.port}" if parsed.port else "")
        return parsed._replace(netloc=netloc).geturl() if parsed.netloc else uri
    path = Path(parsed.path if parsed.scheme else uri)
    if parsed.scheme == "sqlite" and uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
    try:
        shown = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = path.resolve()
    return f"{parsed.scheme or 'file'} store {shown}"


def _claims_header(plan: Plan, results: dict[CellKey, CellResult], selection: str) -> list[str]:
    counts = sorted({result.n for result in results.values() if result.n})
    seeds = "/".join(map(str, counts)) or "no"
    noun = "seed" if counts == [1] else "seeds"
    lines = [
        f"Selection: {selection} evaluation, the same for every method; {seeds} {noun} per cell, as found "
        "(a cell missing a seed its block ran is partial)."
    ]
    ablations = [block for block in plan.blocks if block is not report_blocks().main]
    if ablations:
        env, scale = plan.settings(ablations[0])[0]
        lines.append(f"Ablations read at {environment_label(env)}, scale {scale_label(scale)}.")
    if report_blocks().main in plan.blocks:
        settings = [
            f"{env}/{scale}"
            for env, scale in plan.settings(report_blocks().main)
            if any(results[plan.cell(variant, env, scale)].n for variant in report_blocks().main.variants)
        ]
        lines.append(f"Main comparison in the settings with runs: {', '.join(settings) or 'none'}.")
    return lines


def _ledger_frame(ledger: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """runs.csv: one line per run of the experiment, whether it was used, where, and why not."""
    columns = ["run_id", "status", "method", "env", "scale", "seed", "block", "run_key", "score", "iteration", "reason"]
    frame = ledger.loc[:, columns].copy()
    frame.insert(1, "used", ledger["reason"].isna())
    frame["cells"] = [" ".join(plan.names(cell)) if used else "" for used, cell in zip(frame["used"], ledger["cell"])]
    return frame


if __name__ == "__main__":
    sys.exit(main())
