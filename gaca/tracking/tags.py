"""The MLflow tags and run name of a run, shared by the CPU trainer and the verl job wrapper (``gaca.contract``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from gaca.contract import TAG_BACKEND, TAG_BLOCK, TAG_ENV, TAG_METHOD, TAG_SCALE, TAG_SEED

if TYPE_CHECKING:
    from gaca.backends.config import RunConfig


def scale(run: RunConfig) -> str:
    """``gaca.scale``: the model preset, or the checkpoint's folder name for ``model=path``."""
    if run.model.name != "path":
        return run.model.name
    return Path(cast(str, run.model.path)).name  # model=path is validated to name its checkpoint


def run_tags(run: RunConfig) -> dict[str, str]:
    """Every contract tag but ``gaca.run_key`` and ``gaca.git_commit`` (``RunLogger.open`` adds those)."""
    return {
        TAG_BLOCK: run.block,
        TAG_METHOD: run.algorithm.method,
        TAG_ENV: run.env.name,
        TAG_SEED: str(run.seed),
        TAG_SCALE: scale(run),
        TAG_BACKEND: run.backend.name,
    }


def run_name(run: RunConfig, key: str) -> str:
    """``gaca-household-Qwen2.5-1.5B-Instruct-s0-1a2b3c``: method, env, scale, seed, key prefix."""
    return f"{run.algorithm.method}-{run.env.name}-{scale(run)}-s{run.seed}-{key[:6]}"
