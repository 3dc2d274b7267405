"""A sweep's execution once its runs are planned: the store prepared, the runs listed with their state,
the runs to run dispatched (two at a time locally, or to SLURM) and waited for with progress, and a
summary. Shared by ``gaca sweep`` and its ``--until-decided`` rounds."""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gaca.backends.backend_config import spec as backend_spec
from gaca.orchestration.display import (
    Progress,
    clock,
    describe_log,
    error_excerpt,
    last_iteration,
    makespan,
    starting_now,
)
from gaca.orchestration.plan import DONE, LAUNCHED, RUNNING, PlannedRun
from gaca.text import table
from gaca.tracking.secrets import redact_text, redact_uri

if TYPE_CHECKING:
    from gaca.compose.session import HydraSession
    from gaca.orchestration.dispatch import Outcome

POLL_S = 1.0
"""Seconds between looks at the running jobs."""
EXIT_INVALID = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def execute(runs: list[PlannedRun], session: HydraSession, name: str, dry_run: bool) -> int:
    """List ``runs`` with their state; unless ``dry_run``, launch the unfinished ones and wait."""
    from gaca.orchestration.plan import (
        attach_extensions,
        attach_states,
        estimate,
        recorded_runs,
        shared_overrides,
        tracking_of,
    )
    from gaca.orchestration.store_writes import prepare_for_writes

    try:
        uri, experiment = tracking_of(runs)
    except ValueError as error:
        print(f"gaca sweep: {error}", file=sys.stderr)
        return EXIT_INVALID
    problem = unusable_places(runs, uri, session, dry_run)
    if problem:
        print(f"gaca sweep: {problem}; nothing was launched", file=sys.stderr)
        return EXIT_INVALID
    if not dry_run:
        prepare_for_writes(uri, experiment, f"sweep-{name}")  # once, before any job opens the store
    recorded = recorded_runs(uri, experiment)
    attach_states(runs, recorded)
    attach_extensions(runs, recorded)
    print(redact_text(run_table(runs)))
    shared = shared_overrides(runs)
    if shared:
        print(redact_text(f"every run: {' '.join(shared)}"))
    counts = {state: sum(run.state == state for run in runs) for state in dict.fromkeys(r.state for r in runs)}
    states = ", ".join(f"{n} {state}" for state, n in counts.items())
    print(f"\n{name}: {len(runs)} runs ({states}); MLflow {redact_uri(uri)}, experiment {experiment!r}")
    parallel = session.parallel_jobs
    if parallel is None and uri.startswith("sqlite:"):
        print(
            "note: jobs on several nodes should log through a server (sweeps/README.md, MLflow): gaca mlflow --host "
            "0.0.0.0"
        )
    to_launch = [run for run in runs if run.state in LAUNCHED]
    for backend in dict.fromkeys(run.config.backend.name for run in to_launch):  # e.g. verl's job command lines
        jobs = backend_spec(backend).jobs_text([r for r in to_launch if r.config.backend.name == backend], uri, session)
        if jobs:
            print(redact_text(jobs))
    cost = estimate(to_launch)
    wall = ""
    if parallel is not None and cost.unit == "CPU minutes":
        wall = f", about {makespan([], cost.amounts, parallel):.0f} min of wall time at {parallel} jobs at once"
    print(f"to launch: {cost}{wall}")
    if dry_run:
        print("dry run: nothing launched")
        return 0
    if not to_launch:
        print("nothing to launch")
        return 0
    return launch_claimed(to_launch, session, name, [run for run in runs if run.state == RUNNING], uri, experiment)


def launch_claimed(
    runs: list[PlannedRun], session: HydraSession, name: str, elsewhere: list[PlannedRun], uri: str, experiment: str
) -> int:
    """``dispatch`` the runs this driver claims; wait for those another sweep holds
    (``gaca.orchestration.run_claims``)."""
    from gaca.orchestration.plan import attach_states, recorded_runs
    from gaca.orchestration.run_claims import dispatch_claimed

    return dispatch_claimed(
        runs,
        lambda mine: dispatch(mine, session, name, elsewhere),
        lambda waiting: attach_states(waiting, recorded_runs(uri, experiment)),
    )


def unusable_places(runs: list[PlannedRun], uri: str, session: HydraSession, dry_run: bool) -> str | None:
    """Why the sweep cannot start here, looked at before anything is created, or None: the MLflow
    store (a server must answer; SQLite must be writable), the runs' output folders, the launcher."""
    import shutil

    from gaca.tracking.store import StoreUnavailable, check_store, unwritable

    try:
        check_store(uri, writes=not dry_run)
    except StoreUnavailable as error:
        return str(error)
    if dry_run:
        return None
    for folder in sorted({run.config.output_dir for run in runs}):
        problem = unwritable(Path(folder))
        if problem:
            return f"output_dir={folder} cannot be written ({problem}); set output_dir=<a writable folder>"
    if session.parallel_jobs is None and shutil.which("sbatch") is None:
        return (
            f"launcher={session.launcher_name} submits to SLURM, but sbatch is not on PATH here; run on a "
            "SLURM login node (or drop launcher= to run locally)"
        )
    return None


def run_table(runs: list[PlannedRun]) -> str:
    rows = [
        [
            run.index,
            " +".join([run.block, *run.also_in]),
            run.key,
            "skip (done)" if run.state == DONE else run.state + (f" (from {run.extends})" if run.extends else ""),
            run.label,
        ]
        for run in runs
    ]
    return table(["#", "block", "run key", "state", "run"], rows)


def dispatch(runs: list[PlannedRun], session: HydraSession, name: str, elsewhere: list[PlannedRun]) -> int:
    """Launch ``runs``, report each as it ends, summarise; the exit status."""
    from gaca.orchestration.dispatch import JobPool
    from gaca.orchestration.job import run as run_job

    pool = JobPool(session.launcher(run_job), session.parallel_jobs)
    pool.add([(run.key, run.index, session.job_overrides(run.overrides)) for run in launch_order(runs)])
    at_once = "as one job array" if session.parallel_jobs is None else f"at most {session.parallel_jobs} at once"
    print(
        f"launching {len(runs)} jobs through submitit_{session.launcher_name} ({at_once}); "
        f"logs under {session.sweep_dir}",
        flush=True,
    )
    by_key = {run.key: run for run in runs}
    to_train = {run.key: run.config.trainer.iterations - (run.extends or 0) for run in runs}
    progress = Progress(len(runs), sum(to_train.values()), slots=session.parallel_jobs)
    iterations: dict[str, int] = {}  # run key -> iterations trained, from its job's log (all, once it ended)
    watched: dict[str, int] = {}  # run key -> its iterations when first seen: the pace counts what was trained since
    failures: list[tuple[PlannedRun, Outcome]] = []
    try:
        while pool.busy:
            for polled, outcome in pool.poll():
                key = str(polled)  # the pool's keys are run keys
                run = by_key[key]
                if outcome.ok:
                    watched.setdefault(key, to_train[key])  # ended before its log was read: adds nothing to the pace
                    iterations[key] = to_train[key]
                    value = "already finished" if outcome.value is None else f"final eval success {outcome.value:.3f}"
                    progress.event(redact_text(f"{run.label}  ({value}, {clock(outcome.seconds)})"), ok=True)
                else:
                    failures.append((run, outcome))
                    progress.event(
                        redact_text(f"{run.label}  ({outcome.error.strip().splitlines()[-1][:160]})"), ok=False
                    )
            starting = []
            for polled, log in pool.logs().items():
                key = str(polled)
                trained = last_iteration(log) - (by_key[key].extends or 0)  # an extension starts past its source
                iterations[key] = max(iterations.get(key, 0), trained)
                watched.setdefault(key, iterations[key])  # a resumed run starts at its checkpoint
                doing = starting_now(log) if trained <= 0 else None
                if doing:
                    starting.append(f"{by_key[key].label}: starting policy, {doing}")
            running_left = [max(to_train[str(key)] - iterations.get(str(key), 0), 0) for key in pool.running]
            queued_left = [to_train[str(key)] for key, _, _ in pool.queue]
            progress.tick(
                len(pool.running),
                len(pool.queue),
                sum(iterations.values()),
                (running_left, queued_left),
                trained=sum(iterations[key] - watched[key] for key in iterations),
                starting=starting,
            )
            if pool.busy:
                time.sleep(POLL_S)
    except KeyboardInterrupt:
        cancelled = pool.cancel_all()
        progress.close()
        print(f"\ninterrupted: {len(cancelled)} jobs cancelled; rerun the same command to resume them", file=sys.stderr)
        return EXIT_INTERRUPTED
    wall = progress.close()
    done = len(runs) - len(failures)
    print(f"\n{name}: {done} of {len(runs)} launched runs done, {len(failures)} failed, wall {clock(wall)}")
    if elsewhere:
        print(f"{len(elsewhere)} runs were being trained by other jobs and were left to them (see `gaca status`)")
    if failures:
        report_failures(failures, len(runs))
        return EXIT_FAILED
    return 0


def launch_order(runs: list[PlannedRun]) -> list[PlannedRun]:
    """The runs taken round-robin over their starting policies (``RunConfig.starting_policy``, the
    behaviour-clone cache key), plan order within each: jobs that start together then build different
    clones, instead of one job idling on the cache lock while another builds the clone they share
    (the detector block's first two runs are seed 0's entropy and uniform)."""
    groups: dict[str, list[PlannedRun]] = {}
    for run in runs:
        start = run.config.starting_policy()
        groups.setdefault(run.key if start is None else json.dumps(start, sort_keys=True), []).append(run)
    layers = itertools.zip_longest(*groups.values())
    return [run for layer in layers for run in layer if run is not None]


def report_failures(failures: list[tuple[PlannedRun, Outcome]], launched: int) -> None:
    """Each failed run with the end of its traceback and its log, on stderr."""
    print(f"\nFAILED ({len(failures)}):", file=sys.stderr)
    for run, outcome in failures:
        print(redact_text(f"  {run.label}  [{run.block}, run key {run.key}]"), file=sys.stderr)
        print(redact_text(error_excerpt(outcome.error)), file=sys.stderr)
        print(f"      {describe_log(outcome.log)}", file=sys.stderr)
    print(
        f"gaca sweep: {len(failures)} of {launched} runs failed; rerun the same command to retry them "
        "(finished runs are skipped, unfinished ones resume from their last checkpoint)",
        file=sys.stderr,
    )
