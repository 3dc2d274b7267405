"""``gaca status [BLOCK|all] [overrides]``: from MLflow, what of each block is done, running,
interrupted, failed or missing, and which of the runs not started a live sweep has claimed (queued).
The overrides select the same runs as ``gaca sweep`` with them."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from gaca.compose.blocks import ALL, block_names
from gaca.contract import TAG_BLOCK
from gaca.orchestration.plan import DONE, FAILED_BEFORE, INTERRUPTED, RUNNING, TO_RUN
from gaca.text import table
from gaca.tracking.secrets import redact_text, redact_uri

QUEUED = "queued"
"""Not started (missing, failed or interrupted in MLflow), but claimed by a live sweep that will launch it."""
COLUMNS = (
    (DONE, "done"),
    (RUNNING, "running"),
    (INTERRUPTED, "interrupted"),
    (FAILED_BEFORE, "failed"),
    (TO_RUN, "missing"),
    (QUEUED, "queued"),
)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gaca status", description="What each ablation block has in MLflow.")
    known = ", ".join([*block_names(), ALL])
    parser.add_argument("block", nargs="?", default=ALL, help=f"one of {known} (default: all)")
    parser.add_argument("overrides", nargs="*", help="the run overrides the sweep was given (e.g. env=shop)")
    args = parser.parse_intermixed_args(argv)
    if "=" in args.block:  # `gaca status env=shop`: every block, with an override
        args.overrides.insert(0, args.block)
        args.block = ALL
    return args


def main(argv: list[str]) -> int:
    from gaca.compose.blocks import load_blocks
    from gaca.compose.session import HydraSession, split_overrides
    from gaca.orchestration.plan import InvalidRuns, attach_states, plan_runs, recorded_runs, tracking_of
    from gaca.orchestration.run_claims import held
    from gaca.tracking.store import StoreUnavailable, check_store

    args = parse(argv)
    try:
        _, hydra_overrides, run_overrides = split_overrides(args.overrides)
        blocks = load_blocks(args.block)
        # Composition only: nothing is launched, so Hydra's sweep dir is a throwaway.
        search_paths = [block.search_path for block in blocks]
        scratch = Path(tempfile.gettempdir())
        session = HydraSession("local", hydra_overrides, search_paths, scratch, job_name="gaca-status")
        plans = {block.name: plan_runs([block], run_overrides, session.compose) for block in blocks}
        uri, experiment = tracking_of([run for runs in plans.values() for run in runs])
    except (InvalidRuns, ValueError) as error:
        print(f"gaca status: {redact_text(str(error))}", file=sys.stderr)
        return 2
    try:
        check_store(uri, writes=False)
    except StoreUnavailable as error:
        print(f"gaca status: {error}", file=sys.stderr)
        return 1
    recorded = recorded_runs(uri, experiment)
    rows = []
    for name, runs in plans.items():
        attach_states(runs, recorded)
        for run in runs:
            if run.state in (TO_RUN, FAILED_BEFORE, INTERRUPTED) and held(run.checkpoint_dir):
                run.state = QUEUED
        keys = {run.key for run in runs}
        others = sum(1 for key, r in recorded.items() if r.tags.get(TAG_BLOCK) == name and key not in keys)
        rows.append([name, len(runs), *(sum(run.state == state for run in runs) for state, _ in COLUMNS), others])
    print(f"MLflow {redact_uri(uri)}, experiment {experiment!r}")
    print(table(["block", "runs", *(title for _, title in COLUMNS), "other runs tagged with the block"], rows))
    if len(plans) == 1:
        (runs,) = plans.values()
        print()
        rows = [[r.index, r.key, r.state, final_success(recorded, r.key), r.run_id or "-", r.label] for r in runs]
        print(redact_text(table(["#", "run key", "state", "final eval success", "MLflow run", "run"], rows)))
    return 0


def final_success(recorded, key: str) -> str:
    record = recorded.get(key)
    return "-" if record is None or record.final_success is None else f"{record.final_success:.3f}"
