"""Two sweeps of one block at once: each run is claimed by one driver, the other waits for it.

A driver claims a run before launching it with a lock (flock) on ``.claim`` in the run's checkpoint
folder, held until the driver ends; the OS drops it when the driver dies, however it dies. A run
another driver holds is listed with its holder and waited for: once neither that driver's claim nor
a job's lock (``gaca.orchestration.job.run_lock``) holds it, MLflow says whether it finished; if
not (the other driver was stopped, or the run failed), this driver claims and launches it itself.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import socket
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gaca.orchestration.job import is_training
from gaca.orchestration.plan import LAUNCHED

if TYPE_CHECKING:
    from gaca.orchestration.plan import PlannedRun

CLAIM_FILE = ".claim"
WAIT_POLL_S = 2.0
"""Seconds between looks at the runs another driver holds."""
EXIT_INTERRUPTED = 130


def holder_line() -> str:
    return f"{getpass.getuser()}@{socket.gethostname()} pid {os.getpid()}, since {datetime.now():%H:%M:%S}"


class Claims:
    """The runs this process has claimed (their open, locked ``.claim`` files)."""

    def __init__(self) -> None:
        self.handles: dict[str, object] = {}

    def take(self, run: PlannedRun) -> str | None:
        """Claim ``run``: None when this process holds it, else who does."""
        if run.key in self.handles:
            return None
        folder = run.checkpoint_dir
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / CLAIM_FILE, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another sweep"
            handle.close()
            return holder
        handle.truncate(0)
        handle.write(holder_line() + "\n")
        handle.flush()
        self.handles[run.key] = handle
        return None


def held(folder: Path) -> bool:
    """Whether a live driver claims, or a live job trains, the run of checkpoint folder ``folder``."""
    path = folder / CLAIM_FILE
    if path.is_file():
        with open(path, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    return is_training(folder)


def dispatch_claimed(
    runs: list[PlannedRun],
    dispatch: Callable[[list[PlannedRun]], int],
    refresh: Callable[[list[PlannedRun]], None],
) -> int:
    """Claim ``runs`` and ``dispatch`` the claimed ones; wait for those another driver holds and
    launch the ones it leaves unfinished (``refresh`` re-reads their states from MLflow). The exit
    status: the worst of the dispatches', 130 when interrupted while waiting."""
    claims = Claims()
    status = 0
    pending = runs
    while pending:
        mine: list[tuple[PlannedRun, str | None]] = []
        others: list[tuple[PlannedRun, str | None]] = []
        for run in pending:
            holder = claims.take(run)
            (mine if holder is None else others).append((run, holder))
        if others:
            print(f"{len(others)} runs are held by another sweep; waiting for them (it may finish them):", flush=True)
            for run, holder in others:
                print(f"  #{run.index} {run.label}  (run key {run.key}, held by {holder})", flush=True)
        if mine:
            code = dispatch([run for run, _ in mine])
            if code == EXIT_INTERRUPTED:
                return code
            status = max(status, code)
        waiting = [run for run, _ in others]
        try:
            while any(held(run.checkpoint_dir) for run in waiting):
                time.sleep(WAIT_POLL_S)
        except KeyboardInterrupt:
            print("\ninterrupted while waiting for another sweep's runs; rerun the same command", file=sys.stderr)
            return EXIT_INTERRUPTED
        if waiting:
            refresh(waiting)
            done = [run for run in waiting if run.state not in LAUNCHED]
            if done:
                print(
                    f"{len(done)} of the {len(waiting)} runs held by another sweep ended there: "
                    + ", ".join(f"#{run.index} {run.state}" for run in done),
                    flush=True,
                )
        pending = [run for run in waiting if run.state in LAUNCHED]
    return status
