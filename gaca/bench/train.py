"""`gaca bench train [--presets P,...] [--variants V;...] [overrides]`: time training runs and print
their per-iteration breakdown.

Each run trains in a temporary working folder with its own SQLite store (nothing is left in the
project); the table gives the perf/* metrics it logged (environment, generation, estimator and
update seconds per iteration, generation and training tokens per second), its wall time and the
CPU time of this process over all its threads. ``--variants`` trains every preset once per variant
(space-separated overrides, variants separated by ';'), one after the other in this process, and
gives each run's CPU and wall time as a ratio to the preset's first variant: a side-by-side
comparison of two settings on the same machine at the same moment.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from mlflow.tracking import MlflowClient

from gaca.contract import EVAL_SUCCESS_RATE

T = TypeVar("T")

PARTS = ("perf/env_s", "perf/generation_s", "perf/estimator_s", "perf/update_s", "perf/iteration_s")
RATES = ("perf/env_steps_per_s", "perf/tokens_per_s", "perf/train_tokens_per_s")


def train_in_temporary_store(
    overrides: list[str], read: Callable[[MlflowClient, str], T], shared: str | None = None
) -> tuple[T, float, float, float]:
    """Train one run composed from ``overrides`` in a temporary working folder with its own SQLite store
    (nothing is left behind); returns ``read(client, run_id)``, the training wall time and the CPU time
    of this process (all threads) in seconds, and the CPU seconds spent building its starting policy
    before the clock started (0 unless ``shared``).

    ``shared``: a working folder kept across runs, so that runs with the same starting policy reuse one
    cached start, as the runs of a block at one seed do; the start is built (or found) before the clock
    starts, and what it cost is returned apart."""
    from hydra import compose, initialize_config_dir

    from gaca.backends.cpu.loop import train
    from gaca.backends.cpu.start import initial_policy
    from gaca.compose import CONF_DIR, validate
    from gaca.envs import make_family

    with tempfile.TemporaryDirectory() as own:
        folder = shared or own
        previous = os.getcwd()
        os.chdir(folder)
        try:
            with initialize_config_dir(str(CONF_DIR), version_base=None):
                cfg = compose("train", overrides=overrides)
            run, resolved = validate(cfg)
            uri = f"sqlite:///{own}/mlflow.db"
            resolved["tracking"]["uri"] = uri
            run = type(run).from_dict(resolved)
            cpu_start = time.process_time()
            if shared:
                initial_policy(run, make_family(run.env), Path(run.output_dir) / "bc-cache")
            start_cpu = time.process_time() - cpu_start
            start, cpu_start = time.perf_counter(), time.process_time()
            result = train(run, resolved, quiet=True)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            return read(MlflowClient(uri), cast(str, result.run_id)), wall, cpu, start_cpu
        finally:
            os.chdir(previous)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca bench train", description=__doc__)
    parser.add_argument("--presets", default="quick,default", help="comma-separated trainer presets to time")
    parser.add_argument(
        "--variants",
        default="",
        help="';'-separated variants, each space-separated overrides, every preset trained once per variant "
        "(e.g. 'trainer.update=every_row;trainer.update=distinct')",
    )
    parser.add_argument(
        "--shared-start",
        action="store_true",
        help="runs with the same starting policy reuse one cached start, as a block's runs at one seed do: "
        "it is built before the clock starts and its CPU time is given apart (column 'start cpu')",
    )
    parser.add_argument("overrides", nargs="*", help="Hydra overrides applied to every preset")
    args = parser.parse_args(argv)
    variants = [variant.split() for variant in args.variants.split(";")]

    def read(client: MlflowClient, run_id: str) -> tuple[dict[str, float], list]:
        medians = {
            key: statistics.median(m.value for m in client.get_metric_history(run_id, key)) for key in PARTS + RATES
        }
        return medians, client.get_metric_history(run_id, EVAL_SUCCESS_RATE)

    rows = []
    with tempfile.TemporaryDirectory() as shared:
        for preset in args.presets.split(","):
            baseline = None
            for variant in variants:
                (medians, curve), wall, cpu, start_cpu = train_in_temporary_store(
                    [f"trainer={preset}", *args.overrides, *variant], read, shared if args.shared_start else None
                )
                baseline = baseline or (cpu, wall)
                ratios = (cpu / baseline[0], wall / baseline[1])
                name = " ".join(variant) or "-"
                rows.append((preset, name, wall, cpu, ratios, medians, curve[0].value, curve[-1].value, start_cpu))

    print(
        "median seconds per iteration (env | generation | estimator | update | whole), rates, wall and CPU time "
        + (
            "incl. evals, on a start built before the clock (its CPU s apart)"
            if args.shared_start
            else "incl. BC init and evals"
        )
        + ", each as a ratio to the preset's first variant"
    )
    width = max(len(row[1]) for row in rows)
    header = (
        f"{'preset':<8} {'variant':<{width}} {'env':>6} {'gen':>6} {'est':>6} {'update':>7} {'iter':>6} "
        f"{'steps/s':>9} {'gen tok/s':>9} {'train tok/s':>11} {'wall s':>7} {'cpu s':>7} {'cpu x':>6} "
        f"{'wall x':>6} {'eval0':>6} {'evalN':>6} {'start cpu':>9}"
    )
    print(header)
    for preset, variant, wall, cpu, (cpu_ratio, wall_ratio), m, first, last, start_cpu in rows:
        print(
            f"{preset:<8} {variant:<{width}} {m['perf/env_s']:>6.2f} {m['perf/generation_s']:>6.2f} "
            f"{m['perf/estimator_s']:>6.3f} {m['perf/update_s']:>7.2f} {m['perf/iteration_s']:>6.2f} "
            f"{m['perf/env_steps_per_s']:>9.0f} {m['perf/tokens_per_s']:>9.0f} {m['perf/train_tokens_per_s']:>11.0f} "
            f"{wall:>7.1f} {cpu:>7.1f} {cpu_ratio:>6.2f} {wall_ratio:>6.2f} {first:>6.2f} {last:>6.2f} "
            f"{start_cpu:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
