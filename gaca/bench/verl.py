"""`gaca bench verl [overrides]`: where verl-agent's seconds per iteration go on this machine, beside the CPU
backend's on the same setting, so that a user knows what a GPU node changes and what it does not.

Trains ``SETTING`` (errand easy, the short preset's batch of 12 tasks x 8 episodes at verl's constant
learning rate, GACA, 4 iterations, one small evaluation at the end) once with the CPU backend and once
through verl-agent's trainer (``backend=verl_cpu``: the checkout and its environment from ``backend.verl_agent_dir`` and
``backend.python``, or ``GACA_VERL_AGENT`` and ``GACA_VERL_PYTHON``), each as ``gaca train`` in a temporary
folder with its own SQLite store (nothing is left behind), then prints the median over the iterations
without an evaluation of each part's seconds (``gaca.contract``'s ``perf/*``):

- generation: the policy's own generation (verl: on the rollout worker, ``gaca.backends.verl.agent.timing``);
- env: the environments (verl: the served environments on the driver);
- Ray: the round trips of the calls to the workers (generation, log-probabilities, update) beyond the
  workers' own time; the CPU backend makes none;
- log-prob: the old and reference policies' log-probabilities recomputed before the update (the CPU
  backend computes them inside its update);
- estimator, update: the advantage estimator and the PPO update;
- other: the iteration's rest (verl: the rollout loop's prompt building, tokenizing and bookkeeping on the
  driver, batch balancing, metrics).

On a GPU node generation, log-prob and update shrink; Ray, env and other are the driver's and do not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from gaca import contract

SETTING = (
    "trainer=short",
    "env.difficulty=easy",
    "algorithm=gaca",
    "seed=0",
    "trainer.iterations=4",
    "trainer.eval_every=4",
    "trainer.num_eval_tasks=8",
    "trainer.eval_episodes_per_task=1",
)
"""What both backends train; later overrides on the command line win."""
BACKENDS = ("cpu", "verl_cpu")
PARTS = {
    "generation": contract.PERF_GENERATION_S,
    "env": contract.PERF_ENV_S,
    "Ray": contract.PERF_RAY_S,
    "log-prob": contract.PERF_LOGPROB_S,
    "estimator": contract.PERF_ESTIMATOR_S,
    "update": contract.PERF_UPDATE_S,
}
"""Column -> the contract metric it reads."""
VERL_TESTING = "timing_s/testing"
"""verl's seconds of the evaluation inside an iteration: such iterations are left out of the medians."""
LOG_TAIL = 40


def train(backend: str, overrides: Sequence[str], folder: Path) -> tuple[dict[str, float | None], float]:
    """``gaca train backend=<backend>`` in ``folder``; the median seconds per part and iteration, and the wall time."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{folder}/mlflow.db"
    log = folder / "train.log"
    argv = [sys.executable, "-m", "gaca.cli", "train", f"backend={backend}", *SETTING, *overrides]
    argv.append(f"tracking.uri={uri}")
    began = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run(argv, cwd=folder, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - began
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL:])
        raise SystemExit(f"{tail}\ngaca bench verl: `gaca train backend={backend}` failed (exit {code}; its log above)")
    client = MlflowClient(uri)
    (run,) = client.search_runs([experiment.experiment_id for experiment in client.search_experiments()])
    run_id = run.info.run_id

    def history(name: str) -> dict[int, float]:
        return {m.step: m.value for m in client.get_metric_history(run_id, name)}

    iterations = history(contract.PERF_ITERATION_S)
    evaluated = set(history(VERL_TESTING))
    steps = [step for step in iterations if step not in evaluated] or list(iterations)
    medians: dict[str, float | None] = {}
    for column, name in {**PARTS, "iteration": contract.PERF_ITERATION_S}.items():
        values = history(name)
        medians[column] = statistics.median(values[s] for s in steps) if all(s in values for s in steps) else None
    return medians, wall


def other(medians: Mapping[str, float | None]) -> float:
    return float(medians["iteration"] or 0.0) - sum(medians[column] or 0.0 for column in PARTS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gaca bench verl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for both runs (after SETTING)")
    args = parser.parse_args(argv)
    verl_options = [o for o in args.overrides if o.startswith(("backend.verl_agent_dir=", "backend.python="))]
    if not os.environ.get("GACA_VERL_AGENT") and not any(o.startswith("backend.verl_agent_dir=") for o in verl_options):
        print(
            "gaca bench verl: backend.verl_agent_dir is unset: give backend.verl_agent_dir=CHECKOUT "
            "backend.python=VENV/bin/python (bash scripts/setup-verl-agent.sh CHECKOUT VENV), or set "
            "GACA_VERL_AGENT and GACA_VERL_PYTHON",
            file=sys.stderr,
        )
        return 2
    shared = [o for o in args.overrides if o not in verl_options]
    rows = []
    for backend in BACKENDS:
        print(f"gaca bench verl: training backend={backend} ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as folder:
            overrides = shared + (verl_options if backend != "cpu" else [])
            rows.append((backend, *train(backend, overrides, Path(folder))))

    print(f"median seconds per iteration without an evaluation; setting: {' '.join(SETTING + tuple(shared))}")
    columns = [*PARTS, "other", "iteration"]
    print(f"{'backend':<9} " + " ".join(f"{c:>10}" for c in columns) + f" {'wall s':>8} {'x cpu':>6}")
    base = rows[0][1]["iteration"] or float("nan")
    for backend, medians, wall in rows:
        cells = [medians[c] for c in PARTS] + [other(medians), medians["iteration"]]
        text = " ".join(f"{'-':>10}" if v is None else f"{v:>10.2f}" for v in cells)
        print(f"{backend:<9} {text} {wall:>8.1f} {(medians['iteration'] or 0.0) / base:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
