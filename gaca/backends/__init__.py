"""What trains a validated run, chosen by ``backend.name``, and what every backend shares.

- ``cpu``: gaca's own group-rollout PPO trainer (``gaca.backends.cpu``), the default.
- ``verl``: a verl-agent training job on GPUs (``gaca.backends.verl``), its metrics copied to the
  contract's names.

Shared by both: the run config (``gaca.backends.config``), ``gaca train`` (``gaca.backends.entry``:
composed and validated by ``gaca.compose``, dispatched here), the run's life in MLflow
(``gaca.backends.lifecycle``) and what
training reports (``gaca.backends.result``).

A backend is ``(RunConfig, resolved config) -> TrainResult``; entries are imported on first use.
"""

from gaca.registry import Registry

BACKENDS: Registry = Registry("backend")
"""``backend.name`` -> the function that trains a validated run."""
BACKENDS.declare("cpu", "gaca.backends.cpu.loop:train")
BACKENDS.declare("verl", "gaca.backends.verl.launch:launch")
