"""The MLflow tags and run name of a run, shared by the CPU trainer and the verl job wrapper (the README's tracking contract)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaca.trainer.config import RunConfig


def scale(run: RunConfig) -> str:
    """``gaca.scale``: the model preset, or the checkpoint's folder name for ``model=path``."""
    return run.model.name if run.model.name != "path" else Path(run.model.path).name


def run_tags(run: RunConfig) -> dict[str, str]:
    """Every contract tag but ``gaca.run_key`` and ``gaca.git_commit`` (``RunLogger.open`` adds those)."""
    return {
        "gaca.block": run.block,
        "gaca.method": run.algorithm.method,
        "gaca.env": run.env.name,
        "gaca.seed": str(run.seed),
        "gaca.scale": scale(run),
        "gaca.backend": run.backend.name,
    }


def run_name(run: RunConfig, key: str) -> str:
    """``gaca-household-Qwen2.5-1.5B-Instruct-s0-1a2b3c``: method, env, scale, seed, key prefix."""
    return f"{run.algorithm.method}-{run.env.name}-{scale(run)}-s{run.seed}-{key[:6]}"
