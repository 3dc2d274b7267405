"""What one sweep or search job runs: ``gaca train``'s task, guarded so that no run trains twice at once.

Hydra's submitit launcher calls ``run(cfg)`` in the job with the run's composed config. The job
is checkpointable through the launcher: on preemption or a time limit submitit requeues the same
call, and the trainer resumes the run from its last checkpoint into the same MLflow run.
"""

from __future__ import annotations

import fcntl
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig

LOCK_FILE = ".lock"
"""In the run's checkpoint folder; held (flock) by the job that trains the run."""


class RunError(RuntimeError):
    """A run that raised; the message is the job's formatted traceback (exceptions travel back
    pickled, without their traceback)."""


class RunBusy(RuntimeError):
    """Another live job holds the run's lock."""


def run(cfg: DictConfig) -> float | None:
    """Train the run of ``cfg``; the final evaluation success (None when it was already finished)."""
    from gaca.backends.cpu.checkpoint import LATEST
    from gaca.compose import validate
    from gaca.tracking.identity import run_key
    from gaca.tracking.secrets import redact_text
    from gaca.train import train_validated

    try:
        config, resolved = validate(cfg)
        folder = Path(config.output_dir) / run_key(resolved)
        with run_lock(folder):
            latest = folder / LATEST
            if latest.is_file():
                print(f"gaca job: checkpoint {folder / latest.read_text().strip()} found", file=sys.stderr, flush=True)
            return train_validated(config, resolved)
    except Exception:
        text = redact_text(traceback.format_exc())
        print(text, file=sys.stderr, flush=True)
        raise RunError(text) from None


@contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold the run's lock while training; the OS releases it when the job dies, however it dies."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunBusy(f"run {folder.name} is being trained by another live job (lock {handle.name})") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_training(folder: Path) -> bool:
    """Whether a live job holds the lock of the run whose checkpoint folder is ``folder``."""
    path = folder / LOCK_FILE
    if not path.is_file():
        return False
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
