"""``gaca search NAME [overrides]``: parse the command line, check the space, run the study."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from gaca.orchestration.plan import PlannedRun
from gaca.orchestration.search.config import (
    BLOCK,
    SEARCH_DIR,
    SEARCH_PREFIX,
    SET_BY_SEARCH,
    SearchConfig,
    load_search,
    trial_overrides,
)


def parse(argv: list[str]) -> argparse.Namespace:
    known = ", ".join(sorted(p.stem for p in SEARCH_DIR.glob("*.yaml")))
    parser = argparse.ArgumentParser(prog="gaca search", description="Optuna over the gate (conf/search/NAME.yaml).")
    parser.add_argument("name", help=f"the search config: {known}")
    parser.add_argument(
        "overrides",
        nargs="*",
        help="run overrides for every trial (e.g. env=shop), launcher=slurm, hydra.launcher.*, search.KEY=VALUE",
    )
    parser.add_argument("--trials", type=int, help="trials the study should have ended with (a rerun continues)")
    parser.add_argument("--workers", type=int, help="trials in flight at once")
    parser.add_argument("--study", help="study name (default: the config's)")
    parser.add_argument("--storage", help="Optuna storage URL (default: sqlite:///optuna.db here)")
    return parser.parse_intermixed_args(argv)


def main(argv: list[str]) -> int:
    from gaca.compose.session import HydraSession, split_overrides
    from gaca.orchestration.plan import InvalidRuns

    args = parse(argv)
    try:
        own = [o for o in args.overrides if o.startswith(SEARCH_PREFIX)]
        search = load_search(args.name, own, args.trials, args.workers, args.study, args.storage)
        launcher, hydra_overrides, run_overrides = split_overrides([o for o in args.overrides if o not in own])
        clashes = [o for o in run_overrides if o.split("=", 1)[0].lstrip("+~") in (*SET_BY_SEARCH, *search.space)]
        if clashes:
            raise ValueError(f"{clashes} are set by the search itself")
        folder = Path("multirun", f"search-{search.study}", datetime.now().strftime("%Y-%m-%d_%H-%M-%S")).resolve()
        session = HydraSession(launcher, hydra_overrides, [], folder, job_name=f"gaca-search-{search.study}")
        corners = check_space(search, run_overrides, session)
    except (ValueError, InvalidRuns) as error:
        print(f"gaca search: {error}", file=sys.stderr)
        return 2
    from gaca.orchestration.search.loop import Search

    return Search(search, session, run_overrides, corners[0]).run()


def check_space(search: SearchConfig, run_overrides: list[str], session: Any) -> list[PlannedRun]:
    """Compose and validate a trial's runs at both corners of the space before the study starts."""
    from gaca.orchestration.plan import plan

    items: list[tuple[str, list[str], list[str]]] = []
    for corner in (0, 1):
        params = {key: bounds[corner] for key, bounds in search.space.items()}
        items += [(BLOCK, [], trial_overrides(params, seed, run_overrides)) for seed in search.seeds]
    return plan(items, session.compose)
