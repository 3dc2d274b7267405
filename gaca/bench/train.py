"""`gaca bench train [overrides]`: time one training run and print its per-iteration breakdown.

Runs in a temporary working folder with its own SQLite store (nothing is left in the project),
then reads the perf/* metrics the run logged: environment, generation, estimator and update
seconds per iteration, generation and training tokens per second, and the wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar, cast

from mlflow.tracking import MlflowClient

from gaca.contract import EVAL_SUCCESS_RATE

T = TypeVar("T")

PARTS = ("perf/env_s", "perf/generation_s", "perf/estimator_s", "perf/update_s", "perf/iteration_s")
RATES = ("perf/env_steps_per_s", "perf/tokens_per_s", "perf/train_tokens_per_s")


def train_in_temporary_store(overrides: list[str], read: Callable[[MlflowClient, str], T]) -> tuple[T, float]:
    """Train one run composed from ``overrides`` in a temporary working folder with its own SQLite store
    (nothing is left behind); returns ``read(client, run_id)`` and the training wall time in seconds."""
    from hydra import compose, initialize_config_dir

    from gaca.backends.cpu.loop import train
    from gaca.compose import CONF_DIR, validate

    with tempfile.TemporaryDirectory() as folder:
        previous = os.getcwd()
        os.chdir(folder)
        try:
            with initialize_config_dir(str(CONF_DIR), version_base=None):
                cfg = compose("train", overrides=overrides)
            run, resolved = validate(cfg)
            uri = f"sqlite:///{folder}/mlflow.db"
            resolved["tracking"]["uri"] = uri
            run = type(run).from_dict(resolved)
            start = time.perf_counter()
            result = train(run, resolved, quiet=True)
            wall = time.perf_counter() - start
            return read(MlflowClient(uri), cast(str, result.run_id)), wall  # the run logged to this store
        finally:
            os.chdir(previous)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca bench train", description=__doc__)
    parser.add_argument("--presets", default="quick,default", help="comma-separated trainer presets to time")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides applied to every preset")
    args = parser.parse_args(argv)

    def read(client: MlflowClient, run_id: str) -> tuple[dict[str, float], list]:
        medians = {
            key: statistics.median(m.value for m in client.get_metric_history(run_id, key)) for key in PARTS + RATES
        }
        return medians, client.get_metric_history(run_id, EVAL_SUCCESS_RATE)

    rows = []
    for preset in args.presets.split(","):
        (medians, curve), wall = train_in_temporary_store([f"trainer={preset}", *args.overrides], read)
        rows.append((preset, wall, medians, curve[0].value, curve[-1].value))

    print(
        "median seconds per iteration (env | generation | estimator | update | whole), rates, wall time incl. BC "
        "init and evals"
    )
    header = (
        f"{'preset':<8} {'env':>6} {'gen':>6} {'est':>6} {'update':>7} {'iter':>6} {'steps/s':>9} "
        f"{'gen tok/s':>9} {'train tok/s':>11} {'wall s':>7} {'eval0':>6} {'evalN':>6}"
    )
    print(header)
    for preset, wall, m, first, last in rows:
        print(
            f"{preset:<8} {m['perf/env_s']:>6.2f} {m['perf/generation_s']:>6.2f} {m['perf/estimator_s']:>6.3f} "
            f"{m['perf/update_s']:>7.2f} {m['perf/iteration_s']:>6.2f} {m['perf/env_steps_per_s']:>9.0f} "
            f"{m['perf/tokens_per_s']:>9.0f} {m['perf/train_tokens_per_s']:>11.0f} {wall:>7.1f} {first:>6.2f} "
            f"{last:>6.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
