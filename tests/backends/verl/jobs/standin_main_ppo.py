"""A CPU stand-in for verl's trainer process (``python -m verl.trainer.main_ppo``), for tests only.

It takes the same command line and composes it with verl's own ``ppo_trainer.yaml`` (so a key verl
lacks fails here as it would there), checks verl-agent's rule ``actor_rollout_ref.rollout.n == 1``,
and logs through verl's own MLflow logger (``verl.utils.tracking.Tracking``) what verl-agent's
trainer logs, under its metric names: validation before training and every ``trainer.test_freq``
steps and at the last, training metrics every step, for ``trainer.total_training_steps`` steps.
It resumes after the step recorded in ``trainer.default_local_dir`` as verl's checkpoints do
(validating again at that step first). Only
what needs a GPU (rollouts, updates) is replaced, by deterministic numbers (``val_success``).

``STANDIN_FAIL_AFTER=k``: exit with status 3 right after step k (a trainer crash).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CHECKPOINT_MARKER = "latest_checkpointed_iteration.txt"
"""verl's file naming the last saved step in ``trainer.default_local_dir``."""


def val_success(step: int) -> float:
    return round(0.1 + 0.02 * step, 6)


def train_metrics(step: int) -> dict[str, float]:
    return {
        "episode/success_rate": round(0.05 + 0.01 * step, 6),
        "episode/reward/mean": round(0.5 * step, 6),
        "episode/length/mean": 40.0 - step,
        "actor/pg_loss": round(-0.01 * step, 6),
        "actor/kl_loss": round(0.001 * step, 6),
        "actor/pg_clipfrac": 0.02,
        "actor/entropy_loss": 1.5,
        "actor/grad_norm": 0.3,
        "timing_s/step": 1.25,
    }


def main(overrides: list[str]) -> int:
    import verl
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
    from verl.utils.tracking import Tracking

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose("ppo_trainer", overrides=overrides)
    assert config.actor_rollout_ref.rollout.n == 1, "verl-agent keeps rollout.n == 1 and groups by env.rollout.n"
    trainer = config.trainer
    checkpoints = Path(trainer.default_local_dir)
    marker = checkpoints / CHECKPOINT_MARKER
    start = int(marker.read_text()) if trainer.resume_mode == "auto" and marker.is_file() else 0
    tracking = Tracking(
        project_name=trainer.project_name,
        experiment_name=trainer.experiment_name,
        default_backend=list(trainer.logger),
        config=OmegaConf.to_container(config, resolve=True),
    )
    fail_after = int(os.environ.get("STANDIN_FAIL_AFTER", "-1"))
    total = trainer.total_training_steps
    if trainer.val_before_train:  # verl validates again at the resumed step, as it does at step 0
        tracking.log({"val/success_rate": val_success(start)}, step=start)
    for step in range(start + 1, total + 1):
        metrics = train_metrics(step)
        if step % trainer.test_freq == 0 or step == total:
            metrics["val/success_rate"] = val_success(step)
        tracking.log(metrics, step=step)
        if trainer.save_freq > 0 and (step % trainer.save_freq == 0 or step == total):
            checkpoints.mkdir(parents=True, exist_ok=True)
            marker.write_text(str(step))
        if step == fail_after:
            print(f"stand-in trainer: failing after step {step}", file=sys.stderr)
            return 3
    tracking.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
