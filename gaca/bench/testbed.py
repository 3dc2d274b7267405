"""`gaca bench testbed [overrides]`: the credit-assignment properties of each testbed (docs/testbed.md),
at the behaviour-cloned start and after training.

Each testbed trains one run (its own temporary folder and SQLite store; nothing is left in the
project) and the table reads the run's logged metrics: "start" is iteration 1, whose batch the
behaviour clone collected before any update; "trained" is the mean of the last three iterations.
"""

from __future__ import annotations

import argparse
import statistics

from mlflow.tracking import MlflowClient

from gaca import contract
from gaca.bench.train import train_in_temporary_store

CONSTRAINED = ["model.decoding=constrained", "model.show_admissible=false"]
"""Decoding among the environment's well-formed commands, with no command list in the prompt."""

TESTBEDS: dict[str, list[str]] = {
    "household": ["env=household", "trainer.eval_episodes_per_task=1", *CONSTRAINED],
    "errand-constrained": CONSTRAINED,
    "errand-hidden": ["env.knobs.show_held=0"],
    "errand-chance": ["env.knobs.prior_accuracy=0"],
    "errand-one-end": ["env.knobs.num_goals=1"],
    "errand": [],
}
"""Testbed name -> overrides on the composed defaults: household is the earlier CPU default of the
ablations (horizon 20, constrained decoding over admissible commands only, one evaluation episode
per task); errand is the ablation default (free decoding, the admissible commands listed in the
prompt); errand-constrained is errand decoded among its well-formed commands; errand-hidden is
errand with the carried object shown only by "inventory" (as in ALFWorld), the variant it was
chosen over; errand-chance is errand whose base policy chooses at chance (no prior stage), on which
RL does not learn the choice within the budget; errand-one-end is errand whose route ends at the
goal (one pivot, not two) (docs/testbed.md)."""

PROPERTIES = (
    ("prior: right at the pivots", contract.INIT_PRIOR_ACCURACY),
    ("success rate", contract.TRAIN_SUCCESS_RATE),
    ("invalid-action rate", contract.TRAIN_INVALID_ACTION_RATE),
    ("episode length / horizon", contract.DIAG_LENGTH_FRAC),
    ("rows with A = 0", contract.DIAG_ZERO_ADV_FRAC),
    ("groups with mixed outcomes", contract.DIAG_MIXED_GROUP_FRAC),
    ("non-singleton anchor rows", contract.DIAG_NONSINGLETON_FRAC),
    ("corr(A^S, A^E)", contract.DIAG_STEP_EPISODE_CORR),
    ("criticality spread (std c)", contract.DIAG_CRITICALITY_STD),
    ("lambda mean", contract.DIAG_LAMBDA_MEAN),
    ("lambda std", contract.DIAG_LAMBDA_STD),
    ("clamped lambda", contract.DIAG_CLAMP_FRAC),
    ("corr(c, response length)", contract.DIAG_C_LENGTH_CORR),
)
"""(row label, logged metric) of the table, in order."""

LAST = 3
"""Iterations averaged for the "trained" column."""


def start_and_trained(history: list[tuple[int, float]]) -> tuple[float | None, float | None]:
    """One metric's (step, value) history -> (its value at iteration 1, the mean of its last ``LAST``
    iterations); a metric logged only at step 0 is a property of the starting policy: (that value, None)."""
    history = sorted(history)
    if not history:
        return None, None
    if history[-1][0] == 0:
        return history[0][1], None
    first = history[0][1] if history[0][0] == 1 else None
    return first, statistics.fmean(value for _, value in history[-LAST:])


def measure(name: str, overrides: list[str]) -> dict[str, tuple[float | None, float | None]]:
    """Train one run of testbed ``name``; metric -> (start value, trained value)."""

    def read(client: MlflowClient, run_id: str) -> dict[str, tuple[float | None, float | None]]:
        values: dict[str, tuple[float | None, float | None]] = {}
        for _, key in PROPERTIES:
            values[key] = start_and_trained([(m.step, m.value) for m in client.get_metric_history(run_id, key)])
        return values

    print(f"testbed {name}: training ...", flush=True)
    return train_in_temporary_store([*TESTBEDS[name], *overrides], read)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca bench testbed", description=__doc__)
    parser.add_argument("--testbeds", default=",".join(TESTBEDS), help=f"comma-separated, from {list(TESTBEDS)}")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides applied to every testbed (e.g. seed=1)")
    args = parser.parse_args(argv)
    names = args.testbeds.split(",")
    unknown = [n for n in names if n not in TESTBEDS]
    if unknown:
        parser.error(f"--testbeds: unknown {unknown}; known: {list(TESTBEDS)}")
    measured = {name: measure(name, args.overrides) for name in names}

    def cell(value: float | None) -> str:
        return f"{value:>9.3f}" if value is not None else f"{'-':>9}"

    print(
        "start = iteration 1 (the behaviour clone's batch; the prior row: step 0), trained = mean of the last "
        f"{LAST} iterations"
    )
    print(f"{'property':<28}" + "".join(f" {name[:19]:>19}" for name in names))
    print(f"{'':<28}" + "".join(f" {'start':>9} {'trained':>9}" for _ in names))
    for label, key in PROPERTIES:
        print(f"{label:<28}" + "".join(f" {cell(measured[n][key][0])} {cell(measured[n][key][1])}" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
