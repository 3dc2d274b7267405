"""``gaca sweep BLOCK --until-decided [--max-seeds N] [--margin M]``: run a block in rounds of seeds
until every comparison its claims make is decided (``analysis.stats.sequential``), or the budget is spent.

Round k runs seeds 0 .. n_k - 1 of the cells the claims compare (the first round: every row a
comparison of the block's claims, or of the ``--claim`` ones, reads; later rounds: the rows of the
comparisons still undecided; the seeds already finished are skipped, as in any sweep), then the
claims are replayed look by look (``analysis.claims.replay``: tests by betting, valid at every
look): each comparison's interval and decision, which comparisons remain and the seeds left are
printed, and the block stops when nothing remains.

The design (``analysis.stats.sequential.Schedule``) is written once as the experiment tag
``gaca.sequential.<block>[.<hash of the run overrides, where runs log aside>]`` before the first round; a rerun with
another design is refused, so a killed sweep continues from the seeds already logged with the
schedule it started with. Every run of the block is tagged ``gaca.sequential.<block>`` with the
design after its round (a tag: the run key does not change).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from typing import TYPE_CHECKING, Any

from gaca.contract import TAG_SEQUENTIAL

if TYPE_CHECKING:
    from analysis.claims.replay import Replay
    from analysis.stats.sequential import Schedule
    from gaca.compose.blocks import Block
    from gaca.orchestration.plan import PlannedRun

EXIT_INVALID = 2
PLACEMENT_KEYS = ("tracking.", "output_dir=")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from analysis.stats import basic, sequential

    group = parser.add_argument_group("run until decided (seeds in rounds, analysis/stats/sequential.py)")
    group.add_argument(
        "--until-decided", action="store_true", help="run rounds of seeds until every claim comparison is decided"
    )
    group.add_argument("--max-seeds", type=int, help=f"seed budget per cell (default {sequential.MAX_SEEDS})")
    group.add_argument(
        "--margin", type=float, help=f"equivalence margin in points (default {100 * basic.EQUIVALENCE_MARGIN:g})"
    )
    group.add_argument("--first-round", type=int, help=f"seeds of the first round (default {sequential.FIRST_ROUND})")
    group.add_argument("--round", type=int, help=f"seeds added per later round (default {sequential.ROUND})")
    group.add_argument("--alpha", type=float, help=f"level of each claim's tests (default {basic.ALPHA:g})")
    group.add_argument(
        "--assume",
        help="what 'equivalent' and 'does not help' assume: "
        + "; ".join(f"{name}: {text}" for name, text in sequential.ASSUMPTIONS.items())
        + f" (default {sequential.DEFAULT_ASSUME})",
    )
    group.add_argument(
        "--claim",
        action="append",
        metavar="NAME",
        help="decide only this claim of the block (repeatable; default every claim the block makes)",
    )


SEQUENTIAL_FLAGS = ("max_seeds", "margin", "first_round", "round", "alpha", "assume", "claim")


def design(args: argparse.Namespace) -> Schedule:
    """The schedule the flags ask for; ValueError naming the flag and what it allows when one is invalid."""
    from analysis.stats import basic, sequential

    given = [f"--{flag.replace('_', '-')}" for flag in SEQUENTIAL_FLAGS if getattr(args, flag) is not None]
    if given and not args.until_decided:
        raise ValueError(f"{', '.join(given)} only go with --until-decided")
    if args.margin is not None and not 0 <= args.margin < 100:
        raise ValueError(f"--margin must be in [0, 100) points, got {args.margin:g}")
    alpha = basic.ALPHA if args.alpha is None else args.alpha
    sequential.check_level(alpha, "--alpha")
    assume = sequential.DEFAULT_ASSUME if args.assume is None else args.assume
    sequential.check_assume(assume, "--assume")
    return sequential.Schedule.rounds(
        sequential.MAX_SEEDS if args.max_seeds is None else args.max_seeds,
        sequential.FIRST_ROUND if args.first_round is None else args.first_round,
        sequential.ROUND if args.round is None else args.round,
        alpha,
        basic.EQUIVALENCE_MARGIN if args.margin is None else args.margin / 100.0,
        assume,
    )


def store_key(block: str, run_overrides: list[str]) -> str:
    """The experiment tag that holds a block's design: one per block and command-line overrides."""
    key = f"{TAG_SEQUENTIAL}.{block}"
    # Where runs log and write is no part of what they are (nor of their run key).
    identity = sorted(o for o in run_overrides if not o.lstrip("+~").startswith(PLACEMENT_KEYS))
    if identity:
        key += "." + hashlib.sha256(" ".join(identity).encode()).hexdigest()[:8]
    return key


def run_until_decided(args: argparse.Namespace, blocks: list[Block], session: Any, run_overrides: list[str]) -> int:
    """Validate, store the design, then the rounds; the exit status."""
    from analysis.claims.replay import block_claim_names, block_claims, decidable_blocks
    from gaca.orchestration.plan import InvalidRuns, plan_runs, tracking_of

    try:
        schedule = design(args)
        if len(blocks) != 1:
            raise ValueError("--until-decided runs one block at a time, not all")
        block = blocks[0]
        if not block_claims(block.name):
            known = ", ".join(decidable_blocks())
            raise ValueError(
                f"block {block.name!r} makes no claim comparisons to decide; --until-decided works for: {known}"
            )
        known_claims = block_claim_names(block.name)
        unknown = [name for name in args.claim or () if name not in known_claims]
        if unknown:
            raise ValueError(
                f"--claim {unknown[0]!r} is not a claim of block {block.name!r}; allowed: "
                + ", ".join(repr(name) for name in known_claims)
            )
        seeded = [o for o in run_overrides if o.split("=", 1)[0].lstrip("+~") == "seed"]
        if seeded:
            raise ValueError(f"--until-decided chooses the seeds itself; drop {seeded[0]}")
    except ValueError as error:
        print(f"gaca sweep: {error}", file=sys.stderr)
        return EXIT_INVALID
    try:
        first = plan_runs(blocks, [*run_overrides, seeds_override(schedule.looks[0])], session.compose)
        uri, experiment = tracking_of(first)
    except (InvalidRuns, ValueError) as error:
        print(f"gaca sweep: invalid run(s); nothing was launched:\n{error}", file=sys.stderr)
        return EXIT_INVALID
    key = store_key(block.name, run_overrides)
    schedule = earlier_design(uri, experiment, key, schedule)
    problem = stored_conflict(uri, experiment, key, schedule)
    if problem:
        print(f"gaca sweep: {problem}; nothing was launched", file=sys.stderr)
        return EXIT_INVALID
    print(design_text(schedule))
    claims = args.claim or None
    compared = compared_rows(block.name, first[0], claims)
    if args.dry_run:
        from gaca.orchestration.execute import execute

        print(f"dry run: the first round ({schedule.looks[0]} seeds) is")
        return execute(needed_runs(block.name, first, compared)[0], session, block.name, dry_run=True)
    return rounds(block, schedule, key, session, run_overrides, uri, experiment, claims, compared)


def seeds_override(seeds: int) -> str:
    return "seed=" + ",".join(str(seed) for seed in range(seeds))


def design_text(schedule: Schedule) -> str:
    return (
        f"sequential design: looks after {', '.join(map(str, schedule.looks))} seeds; {schedule.describe()}, "
        f"alpha {schedule.alpha:g} per claim (each of its k comparisons at alpha / k), margin "
        f"±{100 * schedule.margin:g} pts"
    )


def earlier_design(uri: str, experiment: str, key: str, schedule: Schedule) -> Schedule:
    """The stored design when it is the earlier betting design with these looks, level and margin (a
    block started with it continues with it, and says so), else ``schedule``."""
    from mlflow.tracking import MlflowClient

    from analysis.stats.sequential import TEST_BETTING
    from analysis.stats.sequential import Schedule as Design
    from gaca.tracking.store import store_exists

    if not store_exists(uri):
        return schedule
    found = MlflowClient(tracking_uri=uri).get_experiment_by_name(experiment)
    stored = None if found is None else found.tags.get(key)
    if stored is None:
        return schedule
    try:
        earlier = Design.from_tag(stored)
    except ValueError:
        return schedule
    same = (earlier.looks, earlier.alpha, earlier.margin) == (schedule.looks, schedule.alpha, schedule.margin)
    if earlier.test == TEST_BETTING and same:
        print(f"this block was started with the earlier design {stored!r}: it continues with its tests by betting")
        return earlier
    return schedule


def stored_conflict(uri: str, experiment: str, key: str, schedule: Schedule) -> str | None:
    """Why the stored design forbids this one (another schedule under ``key``), or None."""
    from mlflow.tracking import MlflowClient

    from gaca.tracking.store import store_exists

    if not store_exists(uri):
        return None
    found = MlflowClient(tracking_uri=uri).get_experiment_by_name(experiment)
    stored = None if found is None else found.tags.get(key)
    if stored is None or stored == schedule.tag():
        return None
    return (
        f"this block was started with the design {stored!r} (experiment tag {key}); rerun with the same "
        f"--max-seeds/--first-round/--round/--margin/--alpha/--assume, not {schedule.tag()!r}"
    )


def rounds(
    block: Block,
    schedule: Schedule,
    key: str,
    session: Any,
    run_overrides: list[str],
    uri: str,
    experiment: str,
    claims: list[str] | None,
    compared: set[str],
) -> int:
    """Round k runs seeds 0 .. n_k - 1 of the cells an undecided comparison reads (the first round:
    ``compared``, the rows the claims compare), then replays the design; ``claims`` names the claims
    to decide (None: all)."""
    from mlflow.tracking import MlflowClient

    from gaca.orchestration.execute import execute
    from gaca.orchestration.plan import plan_runs
    from gaca.tracking.store import prepare_store

    experiment_id = prepare_store(uri, experiment)
    client = MlflowClient(tracking_uri=uri)
    tags = client.get_experiment(experiment_id).tags
    if tags.get(key) is None:
        client.set_experiment_tag(experiment_id, key, schedule.tag())
        client.set_experiment_tag(experiment_id, recorded_key(key), str(int(time.time() * 1000)))
    recorded = client.get_experiment(experiment_id).tags.get(recorded_key(key))
    needed: set[str] | None = compared
    for k, seeds in enumerate(schedule.looks):
        print(f"\n=== round {k + 1} of at most {len(schedule.looks)}: seeds 0-{seeds - 1} ===", flush=True)
        planned = plan_runs([block], [*run_overrides, seeds_override(seeds)], session.compose)
        runs = planned
        if needed is not None:
            runs, skipped = needed_runs(block.name, planned, needed)
            if skipped:
                print(f"not run this round (no comparison still to decide reads them): {', '.join(skipped)}")
        status = execute(runs, session, block.name, dry_run=False)
        if status:
            print(
                f"gaca sweep: round {k + 1} did not finish (exit {status}); rerun the same command to continue",
                file=sys.stderr,
            )
            return status
        tag_runs(client, uri, experiment, runs, block.name, schedule, None if recorded is None else int(recorded))
        replay = evaluate(client, experiment, block.name, planned[0], schedule, claims)
        print(round_text(replay, block.name))
        if replay.finished:
            return 0
        # No comparison could be made yet (a claim without its cells): every cell again.
        needed = replay.needed_rows() if replay.tested else None
    return 0


def block_setting(block_name: str, sample: PlannedRun) -> tuple[Any, Any]:
    """The report's block and a plan of it at the setting ``sample`` (a run of the block) runs in."""
    from analysis.runs.blocks import get_block
    from analysis.runs.cells import Plan
    from gaca.tracking.tags import scale

    block = get_block(block_name)
    return block, Plan((block,), env=sample.config.env.name, scale=scale(sample.config))


def row_names(block: Any, plan: Any) -> dict[Any, str]:
    """The block's cells at the plan's setting, with their row names."""
    env, where = plan.settings(block)[0]
    return {plan.cell(variant, env, where): variant.name for variant in block.variants}


def selected_claims(block_name: str, claims: list[str] | None) -> list[Any]:
    """The claim functions of the block that ``claims`` names (default all of them)."""
    from analysis.claims.replay import block_claim_names

    return [f for name, f in block_claim_names(block_name).items() if claims is None or name in claims]


def compared_rows(block_name: str, sample: PlannedRun, claims: list[str] | None) -> set[str]:
    """The rows the block's (selected) claims compare: the first round runs only these."""
    from analysis.claims.replay import rows_compared

    block, plan = block_setting(block_name, sample)
    return rows_compared(plan, selected_claims(block_name, claims), row_names(block, plan))


def needed_runs(block_name: str, runs: list[PlannedRun], needed: set[str]) -> tuple[list[PlannedRun], list[str]]:
    """The runs of ``runs`` whose row is in ``needed``, and the rows left out (in block order)."""
    from analysis.runs.blocks import get_block

    block = get_block(block_name)
    rows = {run.key: block.variant_of(run.resolved) for run in runs}
    kept = [run for run in runs if (row := rows[run.key]) is None or row.name in needed]
    skipped = [v.name for v in block.variants if v.name not in needed and any(r is v for r in rows.values())]
    return kept, skipped


def recorded_key(key: str) -> str:
    """The experiment tag that holds when the design under ``key`` was recorded (ms since the epoch)."""
    return f"{key}.recorded"


def tag_runs(
    client: Any,
    uri: str,
    experiment: str,
    runs: list[PlannedRun],
    block: str,
    schedule: Schedule,
    recorded: int | None,
) -> None:
    """Tag the finished runs of a round with the design (a tag: their run keys stay as they are),
    except runs that started before the design was ``recorded``: they stay untagged, so the replay
    leaves them out of its decisions (``analysis.claims.replay.designed``)."""
    from gaca.orchestration.plan import recorded_runs

    found = recorded_runs(uri, experiment)
    tag = f"{TAG_SEQUENTIAL}.{block}"
    for run in runs:
        record = found.get(run.key)
        if record is None or record.tags.get(tag) == schedule.tag():
            continue
        if recorded is not None and client.get_run(record.run_id).info.start_time < recorded:
            continue
        client.set_tag(record.run_id, tag, schedule.tag())


def evaluate(
    client: Any, experiment: str, block_name: str, sample: PlannedRun, schedule: Schedule, claims: list[str] | None
) -> Replay:
    """Replay the design on what the store holds for the block, at the setting its runs ran in,
    without the runs that existed before the design (``analysis.claims.replay.designed``, printed);
    ``claims`` (names) the claims replayed, default every claim of the block."""
    from analysis.claims.checks import Evidence
    from analysis.claims.replay import designed, replay
    from analysis.report import read

    block, plan = block_setting(block_name, sample)
    plan, runs = read(client, experiment, plan, "final", None)
    design = designed(plan, block, runs.results, runs.ledger)
    for note in design.notes:
        print(note)
    evidence = Evidence(plan, design.results, runs.diagnostics, schedule.assume)
    return replay(evidence, selected_claims(block_name, claims), schedule, row_names(block, plan))


def round_text(replay: Replay, block: str) -> str:
    """After a round: each comparison's interval and decision at this look, what remains and the seeds left."""
    schedule = replay.schedule
    k = replay.looks_made - 1
    seeds = schedule.looks[k] if k >= 0 else 0
    lines = [f"look {k + 1} of {len(schedule.looks)} at {seeds} seeds:"]
    lines += [f"  {t.line()}" for t in replay.tested]
    left = schedule.max_seeds - seeds
    remaining = replay.remaining
    if not remaining:
        lines.append(
            f"{block}: every comparison decided at {seeds} seeds per cell ({left} seeds of the budget unused); stopped"
        )
    elif replay.looks_made == len(schedule.looks):
        lines.append(
            f"{block}: the budget of {schedule.max_seeds} seeds is spent; {len(remaining)} of {len(replay.tested)} "
            "comparisons remain undecided (inconclusive)"
        )
    else:
        lines.append(
            f"{block}: {len(remaining)} of {len(replay.tested)} comparisons remain "
            f"({', '.join(t.name for t in remaining)}); "
            f"{left} seed(s) of the budget left, next look at {schedule.looks[k + 1]}"
        )
    return "\n".join(lines)
