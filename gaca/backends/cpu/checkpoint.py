"""Verified, atomic checkpoints: a new folder per checkpoint, its manifest of sizes and SHA-256
checksums written last, published by renaming one small pointer file.

A crash while writing leaves at most an unpublished ``*.partial`` folder. A write that fails (a full
disk, a read-only folder) removes its partial folder and ends the run with ``CheckpointWriteError``
naming the path, the previous checkpoint still published. A checkpoint damaged afterwards (a
truncated file, a bad copy) fails its manifest: it is reported with its path and the previous
checkpoint, kept for that, is loaded instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gaca.policy.model import Policy

LATEST = "LATEST"
MANIFEST = "manifest.json"
"""``{relative path: {"size": bytes, "sha256": hex}}`` of every other file of the checkpoint."""
KEEP = 2
"""Checkpoints kept: the newest, and the one to fall back on when the newest is damaged."""


@dataclass
class Checkpoint:
    iteration: int
    """Training iterations completed."""
    policy: Policy
    state: dict[str, Any]
    """optimizer state, MLflow run id, accumulated diagnostics, RNG states."""
    folder: Path
    """Where it was loaded from (absolute)."""


class CorruptCheckpoint(RuntimeError):
    """A checkpoint folder whose files do not match its manifest, or that does not load."""


class CheckpointWriteError(RuntimeError):
    """A checkpoint that could not be written (no space left, a read-only folder); nothing was published."""


def save_checkpoint(directory: Path, iteration: int, policy: Policy, state: dict[str, Any]) -> Path:
    """Write ``directory/iter-NNNNN`` with its manifest and point ``LATEST`` at it; only the newest
    ``KEEP`` checkpoints stay."""
    name = f"iter-{iteration:05d}"
    partial, final, pointer = directory / f"{name}.partial", directory / name, directory / f"{LATEST}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(partial, ignore_errors=True)
        policy.save(partial / "policy")
        torch.save({"iteration": iteration, **state}, partial / "state.pt")
        (partial / MANIFEST).write_text(json.dumps(manifest(partial), indent=1, sort_keys=True))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(partial, final)
        pointer.write_text(name)
        os.replace(pointer, directory / LATEST)
    except (OSError, RuntimeError) as error:  # torch.save reports a failed write as a RuntimeError
        shutil.rmtree(partial, ignore_errors=True)
        pointer.unlink(missing_ok=True)
        if isinstance(error, RuntimeError) and not _is_write_failure(error):
            raise
        published = checkpoint_folders(directory)
        kept = (
            f"the previous checkpoint {published[0].absolute()} is intact"
            if published
            else "no earlier checkpoint exists"
        )
        raise CheckpointWriteError(
            f"cannot write checkpoint {partial.absolute()} ({getattr(error, 'strerror', None) or error}); {kept}; "
            "free space (or make the folder writable) and rerun: the run resumes from it"
        ) from None
    for old in checkpoint_folders(directory)[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _is_write_failure(error: RuntimeError) -> bool:
    """Whether torch.save's ``error`` is a failed file write (its message carries the OS's)."""
    text = str(error).lower()
    return any(words in text for words in ("no space left", "read-only", "file write failed", "permission denied"))


def manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of every file under ``folder`` but the manifest itself."""
    entries = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST):
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        entries[path.relative_to(folder).as_posix()] = {"size": path.stat().st_size, "sha256": digest.hexdigest()}
    return entries


def verify(folder: Path) -> None:
    """Raise ``CorruptCheckpoint`` naming the first file of ``folder`` that its manifest does not vouch for."""
    try:
        expected = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as error:
        raise CorruptCheckpoint(f"no readable {MANIFEST} ({error})") from None
    found = manifest(folder)
    for path, entry in expected.items():
        if path not in found:
            raise CorruptCheckpoint(f"{path} is missing")
        if found[path]["size"] != entry["size"]:
            raise CorruptCheckpoint(f"{path} has {found[path]['size']} bytes, the manifest says {entry['size']}")
        if found[path]["sha256"] != entry["sha256"]:
            raise CorruptCheckpoint(f"{path} does not match its SHA-256 checksum")


def checkpoint_folders(directory: Path) -> list[Path]:
    """The published checkpoint folders of ``directory``, newest (``LATEST``) first."""
    if not directory.is_dir():
        return []
    folders = sorted(
        (p for p in directory.glob("iter-*") if p.is_dir() and not p.name.endswith(".partial")), reverse=True
    )
    pointer = directory / LATEST
    latest = directory / pointer.read_text().strip() if pointer.is_file() else None
    if latest in folders:
        folders.remove(latest)
        folders.insert(0, latest)
    return folders


def load_checkpoint(
    directory: Path,
    device: str | None = None,
    report: Callable[[str], None] | None = None,
    newest: int | None = None,
) -> Checkpoint | None:
    """The newest intact checkpoint of ``directory`` after at most ``newest`` iterations (the last
    step the run's MLflow record holds: a store restored from a backup may hold fewer than the
    checkpoints, and resuming past it would leave a gap in the curves), or None when there is none.

    Each damaged one is reported (``report``, default: a line on stderr) with its path and why,
    and the next older one is tried; when none is intact, a line says the run starts over.
    """
    report = report or (lambda line: print(line, file=sys.stderr, flush=True))
    folders = checkpoint_folders(directory)
    for folder in folders:
        if newest is not None and int(folder.name.removeprefix("iter-")) > newest:
            report(
                f"gaca train: checkpoint {folder.resolve()} is ahead of the run's MLflow record (its last "
                f"step is {newest}); trying an older one"
            )
            continue
        try:
            return _load(folder, device)
        except CorruptCheckpoint as error:
            report(f"gaca train: checkpoint {folder.resolve()} is damaged ({error}); trying an older one")
    if folders:
        report(f"gaca train: no intact checkpoint in {directory.resolve()}; the run starts over from iteration 0")
    return None


def _load(folder: Path, device: str | None) -> Checkpoint:
    if (folder / MANIFEST).is_file():
        verify(folder)
    # Checkpoints written before manifests existed are only checked by loading them.
    try:
        state = torch.load(folder / "state.pt", weights_only=False)
        policy = Policy.load(folder / "policy", device=device)
    except Exception as error:  # torch, safetensors and tokenizers each raise their own kind
        raise CorruptCheckpoint(f"it does not load: {type(error).__name__}: {str(error)[:200]}") from None
    return Checkpoint(state.pop("iteration"), policy, state, folder.resolve())
