"""``gaca sweep BLOCK [--dry-run] [overrides]``: run one ablation block (or ``all``) through Hydra's
submitit launcher, locally or on SLURM, skipping finished runs and resuming unfinished ones.

Every run's config is composed and validated first: one invalid run and nothing is launched and
nothing is written to MLflow. Then the MLflow store and experiment are created once (jobs must not
race to create an SQLite store), the runs are listed with their state, the runs to run are
dispatched and waited for, and a summary ends it. A failed run does not stop the others; the
exit status is 1 when any failed, and the summary names each with its traceback and log.

``--until-decided`` runs the block in rounds of seeds until its claims are decided
(``gaca.orchestration.until_decided``).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from gaca.compose.blocks import ALL, block_names
from gaca.orchestration.execute import EXIT_INVALID, execute
from gaca.orchestration.until_decided import SEQUENTIAL_FLAGS
from gaca.orchestration.until_decided import add_arguments as add_sequential_arguments
from gaca.tracking.secrets import redact_text


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gaca sweep",
        description="Run an ablation block (a file in sweeps/, or `all`) through Hydra's submitit launcher.",
        epilog=f"blocks: {', '.join([*block_names(), ALL])}. Overrides: Hydra syntax; `seed=0,1` sweeps; "
        "`launcher=slurm` selects conf/launcher/slurm.yaml; `hydra.launcher.FIELD=VALUE` sets a launcher field.",
    )
    parser.add_argument("block", help="block name, `all`, or the path of a block file")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every run, or for the launcher")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and the compute; launch nothing")
    add_sequential_arguments(parser)
    return parser.parse_intermixed_args(argv)


def sweep_folder(name: str) -> Path:
    """Hydra's sweep dir of this invocation: job folders and submitit logs."""
    return Path("multirun", name, datetime.now().strftime("%Y-%m-%d_%H-%M-%S")).resolve()


def main(argv: list[str]) -> int:
    from gaca.compose.blocks import load_blocks
    from gaca.compose.session import HydraSession, split_overrides
    from gaca.orchestration.plan import InvalidRuns, plan_runs

    args = parse(argv)
    try:
        launcher, hydra_overrides, run_overrides = split_overrides(args.overrides)
        blocks = load_blocks(args.block)
        name = args.block if args.block == ALL else blocks[0].name
        session = HydraSession(
            launcher, hydra_overrides, [b.search_path for b in blocks], sweep_folder(name), job_name=f"gaca-{name}"
        )
    except Exception as error:  # an unknown block or launcher, a bad hydra.* override
        print(f"gaca sweep: {redact_text(str(error))}", file=sys.stderr)
        return EXIT_INVALID
    if args.until_decided or any(getattr(args, flag) is not None for flag in SEQUENTIAL_FLAGS):
        from gaca.orchestration.until_decided import run_until_decided

        return run_until_decided(args, blocks, session, run_overrides)
    try:
        runs = plan_runs(blocks, run_overrides, session.compose)
    except InvalidRuns as error:
        print(
            f"gaca sweep: {len(error.errors)} invalid run(s); nothing was launched:\n{redact_text(str(error))}",
            file=sys.stderr,
        )
        return EXIT_INVALID
    return execute(runs, session, name, dry_run=args.dry_run)
