"""Dispatch overhead per job: a job that trains nothing, sent exactly as a sweep sends a run.

Each job goes through the sweep's own path (Hydra's submitit launcher as the job, ``JobPool``):
submission, a fresh interpreter, unpickling the launcher, composing the run's config with Hydra,
``run_job``, the result written and read back. What it measures is what every run pays on top
of its training. Run ``python -m gaca.bench.dispatch [--launcher local slurm] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from omegaconf import DictConfig

POLL_S = 0.2


def idle_task(cfg: DictConfig) -> int:
    """The job's task: nothing beyond what dispatch itself costs."""
    return int(cfg.seed)


def run_jobs(pool, session, seeds: list[int]) -> float:
    """Wall seconds to run one job per seed through ``pool``; raises if one fails."""
    began = time.perf_counter()
    pool.add([(seed, seed, session.job_overrides([f"seed={seed}"])) for seed in seeds])
    while pool.busy:
        for key, outcome in pool.poll():
            if not outcome.ok:
                raise RuntimeError(f"benchmark job {key} failed: {outcome.error} ({outcome.log})")
        time.sleep(POLL_S)
    return time.perf_counter() - began


def benchmark(launcher: str, jobs: int, sequential: int, folder: Path) -> dict[str, float | str | int]:
    from gaca.compose.session import HydraSession
    from gaca.orchestration.dispatch import JobPool

    session = HydraSession(launcher, [], [], folder / launcher, job_name="gaca-bench-dispatch")
    pool = JobPool(session.launcher(idle_task), session.parallel_jobs)
    one_at_a_time = [run_jobs(pool, session, [i]) for i in range(sequential)]
    batch = run_jobs(pool, session, list(range(sequential, sequential + jobs)))
    at_once = session.parallel_jobs or "array"
    return {
        "launcher": f"submitit_{launcher}",
        "one job alone (s)": min(one_at_a_time),
        "jobs in batch": jobs,
        "at once": at_once,
        "batch wall (s)": batch,
        "per job in batch (s)": batch / jobs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gaca.bench.dispatch", description=__doc__.splitlines()[0])
    parser.add_argument("--launcher", nargs="+", default=["local"], choices=["local", "slurm"])
    parser.add_argument("--jobs", type=int, default=8, help="jobs in the batch")
    parser.add_argument("--sequential", type=int, default=3, help="single jobs timed one after another (best kept)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="gaca-bench-dispatch-", dir=Path.cwd()))
    try:
        rows = [benchmark(launcher, args.jobs, args.sequential, folder) for launcher in args.launcher]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    from gaca.text import table

    print(table(list(rows[0]), [[f"{v:.2f}" if isinstance(v, float) else v for v in row.values()] for row in rows]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
