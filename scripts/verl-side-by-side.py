"""The two trainers side by side on one run config: the CPU backend and verl-agent's trainer on CPU
(``backend=verl_cpu``), the same tiny policy, tasks and estimator config. Prints per-iteration time,
the peak memory summed over each job's processes, and the evaluation curve, from MLflow.

    GACA_VERL_AGENT=<checkout> GACA_VERL_PYTHON=<VENV>/bin/python \\
      .venv/bin/python scripts/verl-side-by-side.py [FOLDER] [-- more gaca train overrides]

Runs in FOLDER (default: a new temporary folder), its own MLflow store there.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

SHARED = [
    "trainer=quick",
    "trainer.init=scratch",
    "trainer.iterations=3",
    "trainer.tasks_per_iteration=2",
    "trainer.group_size=2",
    "trainer.num_eval_tasks=2",
    "trainer.eval_episodes_per_task=1",
    "trainer.eval_every=1",
    "trainer.checkpoint_every=1",
    "env.difficulty=easy",
    "env.horizon=8",
    "algorithm.conventions=spec",
]
BACKENDS = {"cpu": ["trainer.threads=1"], "verl": ["backend=verl_cpu"]}


def run(folder: Path, overrides: list[str]) -> tuple[float, float]:
    """Wall seconds and peak summed RSS (GB) of `gaca train OVERRIDES` and every process it starts."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "gaca.cli", "train", *overrides],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    root, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.5)
    if process.returncode != 0:
        raise SystemExit(f"gaca train {' '.join(overrides)} exited with {process.returncode}")
    return time.perf_counter() - began, peak / 2**30


def main(argv: list[str]) -> int:
    from mlflow.tracking import MlflowClient

    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    given = argv[: argv.index("--")] if "--" in argv else argv
    folder = Path(given[0]) if given else Path(tempfile.mkdtemp(prefix="verl-side-by-side-"))
    folder.mkdir(parents=True, exist_ok=True)
    measured = {name: run(folder, [*SHARED, *backend, *extra]) for name, backend in BACKENDS.items()}
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    runs = {
        r.data.tags["gaca.backend"]: r
        for r in client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    }

    def curve(name: str, metric: str) -> list[float]:
        history = sorted(client.get_metric_history(runs[name].info.run_id, metric), key=lambda m: m.step)
        return [round(m.value, 3) for m in history]

    print(
        f"{'backend':8} {'wall s':>7} {'peak GB':>8} {'s/iteration (median)':>21}  eval success by iteration   eval "
        "return"
    )
    for name, (wall, peak) in measured.items():
        seconds = statistics.median(curve(name, "perf/iteration_s"))
        print(
            f"{name:8} {wall:7.1f} {peak:8.2f} {seconds:21.2f}  {curve(name, 'eval/success_rate')}  "
            f"{curve(name, 'eval/return_mean')}"
        )
    print(f"runs and store in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
