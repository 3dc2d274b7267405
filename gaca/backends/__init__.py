"""What trains a validated run, chosen by ``backend.name``, and what every backend shares.

- ``cpu``: gaca's own group-rollout PPO trainer (``gaca.backends.cpu``), the default.
- ``verl``: a verl-agent training job on GPUs (``gaca.backends.verl``), its metrics copied to the
  contract's names.

Shared by both: the run config (``gaca.backends.config``, its sections in ``trainer_config``,
``tracking_config`` and ``backend_config``), ``gaca train`` (``gaca.train``: composed and
validated by ``gaca.compose``, dispatched here), the run's life in MLflow (``gaca.backends.lifecycle``)
and what training reports (``gaca.backends.result``).

A backend is ``(RunConfig, resolved config) -> TrainResult``, registered with a ``BackendSpec`` (its
options and run checks); entries are imported on first use.
"""

from gaca.backends.spec import BackendSpec
from gaca.registry import Registry

BACKENDS: Registry = Registry("backend")
"""``backend.name`` -> the function that trains a validated run; its spec is a ``BackendSpec``."""
BACKENDS.declare("cpu", "gaca.backends.cpu.loop:train", BackendSpec(options="gaca.backends.cpu.options:CpuOptions"))
BACKENDS.declare(
    "verl",
    "gaca.backends.verl.launcher.launch:launch",
    BackendSpec(
        options="gaca.backends.verl.launcher.run_options:VerlOptions",
        check_run="gaca.backends.verl.launcher.checks:check_run",
        on_gpus=True,
        describe_jobs="gaca.backends.verl.launcher.sweep_jobs:describe_jobs",
    ),
)
