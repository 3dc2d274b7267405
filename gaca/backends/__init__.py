"""What trains a validated run, chosen by ``backend.name``, and the run's life in MLflow that every
backend shares (``gaca.backends.lifecycle``).

- ``cpu``: gaca's own group-rollout PPO trainer (``gaca.trainer``), the default.
- ``verl``: a verl-agent training job on GPUs (``gaca.paper.launch``), its metrics copied to the
  contract's names.

A backend is ``(RunConfig, resolved config) -> TrainResult``; entries are imported on first use.
"""

from gaca.registry import Registry

BACKENDS: Registry = Registry("backend")
"""``backend.name`` -> the function that trains a validated run."""
BACKENDS.declare("cpu", "gaca.trainer.loop:train")
BACKENDS.declare("verl", "gaca.paper.launch:launch")
