"""verl-agent's metric names -> the tracking contract's, so that analysis reads a verl run like any other.

verl's MLflow logger writes the trainer's own names into the run (``val/success_rate``,
``episode/success_rate``, ``actor/pg_loss``, ...). After the trainer exits, the job wrapper copies
each mapped history, point for point, under the contract's name; the verl names stay too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from gaca import contract

EVAL_SUCCESS = contract.EVAL_SUCCESS_RATE
VERL_TO_CONTRACT: Mapping[str, str] = {
    "val/success_rate": EVAL_SUCCESS,  # verl-agent's validation: the share of won episodes
    "episode/success_rate": contract.TRAIN_SUCCESS_RATE,
    "episode/reward/mean": contract.TRAIN_RETURN_MEAN,
    "episode/length/mean": contract.TRAIN_EPISODE_LENGTH,
    "actor/pg_loss": contract.LOSS_POLICY,
    "actor/kl_loss": contract.LOSS_KL,
    "actor/pg_clipfrac": contract.LOSS_CLIP_FRAC,
    "actor/entropy_loss": contract.LOSS_ENTROPY,  # verl-agent's name for the mean token entropy
    "actor/grad_norm": contract.LOSS_GRAD_NORM,
    "actor/lr": contract.TRAIN_LR,
    "timing_s/step": contract.PERF_ITERATION_S,
}
"""verl-agent's metric (its ray_trainer and metric_utils) -> the contract's (``gaca.contract``)."""
MAX_METRICS_PER_CALL = 1000  # MLflow's log_batch limit


@dataclass(frozen=True)
class Published:
    curve: list[tuple[int, float]]
    """(step, eval success) as logged under ``eval/success_rate``."""
    final: float | None
    """The evaluation success at the last training step, when there is one."""
    missing_final: str
    """Why ``final`` is None (empty when it is not)."""


def publish_contract_metrics(client: MlflowClient, run_id: str, last_step: int) -> Published:
    """Copy every mapped verl history of ``run_id`` under its contract name; steps already there
    are not copied again (a resumed job calls this once more). ``last_step``: the final iteration."""
    batch: list[Metric] = []
    for source, target in VERL_TO_CONTRACT.items():
        present = {m.step for m in client.get_metric_history(run_id, target)}
        # A resumed verl validates again at the step it resumed from: the newer point of a step wins.
        newest = {m.step: m for m in sorted(client.get_metric_history(run_id, source), key=lambda m: m.timestamp)}
        batch += [
            Metric(target, m.value, m.timestamp, step) for step, m in sorted(newest.items()) if step not in present
        ]
    for start in range(0, len(batch), MAX_METRICS_PER_CALL):
        client.log_batch(run_id, metrics=batch[start : start + MAX_METRICS_PER_CALL])
    curve = sorted({m.step: m.value for m in client.get_metric_history(run_id, EVAL_SUCCESS)}.items())
    if not curve:
        return Published(
            [],
            None,
            "verl logged no val/success_rate: validation was off (trainer.test_freq) or "
            "the environment manager reported no success",
        )
    step, value = curve[-1]
    if step != last_step:
        return Published(curve, None, f"the last validation was at step {step}, not at the last step {last_step}")
    return Published(curve, value, "")
