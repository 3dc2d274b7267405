"""Soak test of kills: K times, a quick block is swept into a fresh store and, at a random moment,
the driver (with its jobs, as a closed terminal or a lost node does) or one random job is SIGKILLed;
then the same sweep is rerun, and rerun again if it too ends unfinished. Every run must end FINISHED
in exactly one MLflow run, with every metric step once, and every logged value equal to an
uninterrupted sweep's.

Run ``python -m gaca.bench.soak [--kills K] [--seed S]`` (or ``gaca bench soak``); it prints a
line per kill and a summary table. Everything happens in a temporary folder (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TINY_RUN = [
    "trainer=quick",
    "trainer.iterations=6",
    "trainer.tasks_per_iteration=1",
    "trainer.group_size=2",
    "trainer.init=scratch",
    "trainer.eval_every=2",
    "trainer.num_eval_tasks=2",
    "trainer.checkpoint_every=1",
    "trainer.transcripts=0",
    "env.horizon=4",
]
"""A run of seconds: no behaviour cloning, one task of two rollouts per iteration, a 4-step horizon, six
iterations with a checkpoint after each (so that kills land between and inside checkpoints)."""
QUICK = ["detector", "seed=0", "algorithm.detector=entropy,uniform", *TINY_RUN]
"""Two such runs: the block the soak benchmark kills."""
CHECKS = (
    "runs not FINISHED",
    "MLflow runs per key > 1",
    "extra keys",
    "duplicated metric steps",
    "runs whose values differ",
)
"""What must be zero after every kill and rerun."""
JOB_MARK = "submitit"
"""In the command line of a local job's process (``python -m submitit.core._submit``)."""


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def sweep(folder: Path, block: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gaca.cli", "sweep", *block],
        cwd=folder,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def jobs_of(pid: int) -> list[int]:
    """The local job processes a driver started."""
    jobs = []
    for child in descendants(pid):
        try:
            command = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if JOB_MARK in command and "_submit" in command:
            jobs.append(child)
    return jobs


def logged(uri: str) -> dict[str, list[dict]]:
    """Run key -> every MLflow run with it: status, and each metric's (step, value) points but timings."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("gaca")
    runs: dict[str, list[dict]] = {}
    for run in client.search_runs([experiment.experiment_id], max_results=1000) if experiment else []:
        history = {
            name: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
            for name in run.data.metrics
            if not name.startswith("perf/")
        }
        runs.setdefault(run.data.tags["gaca.run_key"], []).append({"status": run.info.status, "history": history})
    return runs


def soak(kills: int, seed: int, folder: Path, block: list[str]) -> dict[str, object]:
    """The reference sweep, then ``kills`` killed-and-rerun sweeps; the counts (``CHECKS`` must be zero)."""
    rng = random.Random(seed)
    reference_folder, soak_folder = folder / "reference", folder / "soak"
    reference_folder.mkdir()
    soak_folder.mkdir()
    began = time.monotonic()
    if sweep(reference_folder, block).wait() != 0:
        raise RuntimeError(f"the uninterrupted sweep failed (see {reference_folder})")
    reference_s = time.monotonic() - began
    reference = logged(f"sqlite:///{reference_folder / 'mlflow.db'}")
    print(f"uninterrupted sweep: {len(reference)} runs, {reference_s:.0f} s", flush=True)
    totals: Counter = Counter()
    for k in range(1, kills + 1):
        store = soak_folder / f"kill-{k}"
        store.mkdir()
        driver = sweep(store, block)
        at = rng.uniform(2.0, reference_s)
        mode = rng.choice(["driver", "job"])
        deadline = time.monotonic() + at
        while time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.05)
        what = "nothing (the sweep had ended)"
        if driver.poll() is None:
            jobs = jobs_of(driver.pid)
            if mode == "job" and jobs:
                os.kill(rng.choice(jobs), signal.SIGKILL)
                what = "a job"
            else:
                os.killpg(driver.pid, signal.SIGKILL)
                what = "the driver and its jobs"
        driver.wait()
        uri = f"sqlite:///{store / 'mlflow.db'}"
        killed = logged(uri) if (store / "mlflow.db").exists() else {}
        unfinished = sum(not any(r["status"] == "FINISHED" for r in killed.get(key, [])) for key in reference)
        reruns = 0
        while True:
            reruns += 1
            if sweep(store, block).wait() == 0 or reruns == 3:
                break
        soaked = logged(uri)
        outcome = Counter(
            {
                "runs not FINISHED": sum(
                    not any(r["status"] == "FINISHED" for r in soaked.get(key, [])) for key in reference
                ),
                "MLflow runs per key > 1": sum(len(runs) > 1 for runs in soaked.values()),
                "extra keys": len(set(soaked) - set(reference)),
                "duplicated metric steps": sum(
                    len(points) != len({step for step, _ in points})
                    for runs in soaked.values()
                    for run in runs
                    for points in run["history"].values()
                ),
                "runs whose values differ": sum(
                    [r["history"] for r in soaked.get(key, [])] != [runs[0]["history"]]
                    for key, runs in reference.items()
                ),
            }
        )
        totals.update(outcome)
        totals["kills of the driver and its jobs"] += what.startswith("the driver")
        totals["kills of one job"] += what == "a job"
        totals["runs unfinished at the kill"] += unfinished
        totals["reruns"] += reruns
        print(
            f"kill {k}/{kills}: {what} at {at:.1f} s, {unfinished} of {len(reference)} runs unfinished; "
            f"{reruns} rerun(s); lost or duplicated: {sum(outcome.values())}",
            flush=True,
        )
    return {
        "kills": kills,
        "runs per sweep": len(reference),
        **{
            name: totals[name]
            for name in (
                "kills of the driver and its jobs",
                "kills of one job",
                "runs unfinished at the kill",
                "reruns",
            )
        },
        **{name: totals[name] for name in CHECKS},
        "wall (s)": round(time.monotonic() - began),
    }


def main(argv: list[str] | None = None) -> int:
    from gaca.text import table

    parser = argparse.ArgumentParser(prog="python -m gaca.bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10, help="killed-and-rerun sweeps (K)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments and kinds")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="gaca-soak-"))
    try:
        result = soak(args.kills, args.seed, folder, QUICK)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print(table(["measure", "value"], list(result.items())))
    clean = all(result[name] == 0 for name in CHECKS)
    print("every run FINISHED once with the uninterrupted values" if clean else "LOST OR DUPLICATED RESULTS")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
