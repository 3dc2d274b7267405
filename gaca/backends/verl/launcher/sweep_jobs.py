"""What ``gaca sweep`` prints of a block's verl runs before launching them (``BackendSpec.describe_jobs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaca.compose.session import HydraSession
    from gaca.orchestration.plan import PlannedRun


def describe_jobs(runs: list[PlannedRun], uri: str, session: HydraSession) -> str:
    """The exact command line and environment of each verl job, as its job wrapper will start it."""
    from gaca.backends.verl.launcher.job import build_job, gpus_per_node
    from gaca.backends.verl.launcher.run_options import verl_options

    launcher_gpus = session.launcher_config.get("gpus_per_node")
    launcher_gpus = int(launcher_gpus) if launcher_gpus else None
    parts = []
    for run in runs:
        job = build_job(run.config, run.key, uri, run.run_id, launcher_gpus)
        parts.append(f"\nverl job #{run.index} ({run.label}, run key {run.key}):\n{job.shell()}")
    on_cpu = all(verl_options(run.config).device == "cpu" for run in runs)  # backend=verl_cpu asks for none
    if session.launcher_name == "slurm" and launcher_gpus is None and not on_cpu:
        gpus = gpus_per_node(runs[0].config, None)
        parts.append(
            f"\nwarning: hydra.launcher.gpus_per_node is not set, so SLURM allocates no GPU to these jobs while "
            f"verl expects {gpus} per node; set hydra.launcher.gpus_per_node=N (or request GPUs through "
            "hydra.launcher.additional_parameters)"
        )
    return "\n".join(parts) + "\n"
