"""A submitit executor on the local SLURM cluster (the `slurm` marker's gate is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def slurm_executor(tmp_path: Path):
    """A submitit executor on the local cluster's `cpu` partition, logging under tmp_path.

    Jobs run on this machine, so they see tmp_path too.
    """
    import submitit

    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    executor.update_parameters(slurm_partition="cpu", timeout_min=5, cpus_per_task=1, mem_gb=1)
    return executor
