"""Atomic checkpoints: a new folder per checkpoint, published by renaming one small pointer file.

A crash while writing leaves at most an unpublished ``*.partial`` folder, never a corrupt
checkpoint: readers only follow ``LATEST``, which ``os.replace`` swaps atomically.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gaca.policy.model import Policy

LATEST = "LATEST"


@dataclass
class Checkpoint:
    iteration: int
    """Training iterations completed."""
    policy: Policy
    state: dict[str, Any]
    """optimizer state, MLflow run id, accumulated diagnostics, RNG states."""


def save_checkpoint(directory: Path, iteration: int, policy: Policy, state: dict[str, Any]) -> Path:
    """Write ``directory/iter-NNNNN`` and point ``LATEST`` at it; older checkpoints are removed."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"iter-{iteration:05d}"
    partial = directory / f"{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    policy.save(partial / "policy")
    torch.save({"iteration": iteration, **state}, partial / "state.pt")
    final = directory / name
    shutil.rmtree(final, ignore_errors=True)
    os.rename(partial, final)
    pointer = directory / f"{LATEST}.tmp"
    pointer.write_text(name)
    os.replace(pointer, directory / LATEST)
    for old in directory.iterdir():
        if old.is_dir() and old.name != name and old.name.startswith("iter-"):
            shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(directory: Path, device: str | None = None) -> Checkpoint | None:
    """The checkpoint ``LATEST`` points to, or None when there is none."""
    pointer = directory / LATEST
    if not pointer.is_file():
        return None
    folder = directory / pointer.read_text().strip()
    state = torch.load(folder / "state.pt", weights_only=False)
    return Checkpoint(state.pop("iteration"), Policy.load(folder / "policy", device=device), state)
