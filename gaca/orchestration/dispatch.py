"""Jobs through Hydra's submitit launcher, without waiting for all of them at once.

The plugin's own ``launch()`` submits everything, then blocks on the results in order and stops
at the first failure, which would hide the other runs' outcomes. Here the same launcher object
is the job (its ``__call__`` composes the run and calls the task; its ``checkpoint`` makes the job
requeueable) and is submitted with the executor the plugin would build: one SLURM job array for
the whole batch (SLURM throttles it by ``array_parallelism``), or local processes, at most
``parallel`` at a time. Finished jobs are read back as outcomes that carry the error and the log.

A local job's controller process (submitit's) inherits the driver's stderr, and on a terminal's
Ctrl-C it gets the SIGINT too and prints a KeyboardInterrupt traceback; its stderr is therefore a
log beside the jobs' (``CONTROLLER_LOG``), and the terminal gets the driver's one line.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTROLLER_LOG = "controllers.err"
"""The stderr of local jobs' controller processes, in the jobs' folder."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    value: Any
    """The task's return value (the final evaluation success) when ok."""
    error: str
    """The error, with the job's traceback when the run raised, when not ok."""
    log: Path | None
    """The job's stderr log."""
    seconds: float


def make_executor(launcher: Any) -> Any:
    """The submitit executor that ``launcher.launch()`` would build, from the same parameters."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
    from omegaconf import OmegaConf

    cluster = "slurm" if isinstance(launcher, SlurmLauncher) else "local"
    params = dict(launcher.params)
    init = {"folder": params.pop("submitit_folder")}
    if "max_num_timeout" in params:
        init[f"{cluster}_max_num_timeout"] = params.pop("max_num_timeout")
    executor = submitit.AutoExecutor(cluster=cluster, **init)
    shared = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(**{k if k in shared else f"{cluster}_{k}": v for k, v in params.items()})
    return executor


class JobPool:
    """Runs (key, job number, overrides) items as launcher jobs; ``poll()`` returns finished ones."""

    def __init__(self, launcher: Any, parallel: int | None) -> None:
        self.launcher = launcher
        self.executor = make_executor(launcher)
        self.parallel = parallel
        self.queue: deque[tuple[Hashable, int, list[str]]] = deque()
        self.running: dict[Hashable, tuple[Any, float, float]] = {}
        """key -> (job, time.monotonic() and time.time() at submission)."""

    def add(self, items: list[tuple[Hashable, int, list[str]]]) -> None:
        """Queue jobs; their secret ``backend.env_vars`` values move to this process's environment,
        which the jobs inherit, so that no job pickle holds them (``gaca.tracking.secrets``)."""
        from gaca.tracking.secrets import through_environment

        self.queue.extend((key, number, through_environment(overrides)) for key, number, overrides in items)

    @property
    def busy(self) -> bool:
        return bool(self.queue or self.running)

    def job(self, key: Hashable) -> Any:
        return self.running[key][0]

    def logs(self) -> dict[Hashable, Path]:
        """The stderr log of each running job (where its run prints a line per iteration)."""
        return {key: Path(job.paths.stderr) for key, (job, _, _) in self.running.items()}

    def poll(self) -> list[tuple[Hashable, Outcome]]:
        """Submit what the free slots allow, then collect the jobs that ended."""
        self._submit()
        finished = []
        for key, (job, started, submitted) in list(self.running.items()):
            if ended(job, submitted):
                del self.running[key]
                finished.append((key, read_outcome(job, time.monotonic() - started, submitted)))
        if finished:
            self._submit()
        return finished

    def cancel(self, key: Hashable) -> None:
        """Stop one job (SLURM: scancel; local: SIGINT, then SIGKILL by submitit's controller)."""
        job = self.running.pop(key)[0]
        job.cancel(check=False)

    def discard(self, key: Hashable) -> None:
        """Cancel the job of ``key`` if it runs, or drop it if it waits."""
        if key in self.running:
            self.cancel(key)
        else:
            self.queue = deque(item for item in self.queue if item[0] != key)

    def cancel_all(self) -> list[Hashable]:
        """Cancel every running job and forget the queued ones; the keys of both."""
        keys = list(self.running) + [key for key, _, _ in self.queue]
        for key in list(self.running):
            self.cancel(key)
        self.queue.clear()
        return keys

    def _submit(self) -> None:
        from hydra.core.singleton import Singleton

        free = len(self.queue) if self.parallel is None else max(0, self.parallel - len(self.running))
        batch = [self.queue.popleft() for _ in range(min(free, len(self.queue)))]
        if not batch:
            return
        state = Singleton.get_state()
        submitted = time.time()
        with self._controller_stderr():
            jobs = self.executor.map_array(
                self.launcher,
                [overrides for _, _, overrides in batch],
                ["hydra.sweep.dir"] * len(batch),
                [number for _, number, _ in batch],
                [f"job_id_for_{number}" for _, number, _ in batch],
                [state] * len(batch),
            )
        now = time.monotonic()
        for (key, _, _), job in zip(batch, jobs):
            self.running[key] = (job, now, submitted)

    @contextmanager
    def _controller_stderr(self) -> Iterator[None]:
        """While local controllers are started: file descriptor 2, which they inherit, on ``CONTROLLER_LOG``.

        Nothing else writes to stderr meanwhile (the driver is one thread, and ``map_array`` only
        pickles and starts processes); SLURM jobs need nothing, their output is sbatch's files."""
        from submitit.core.utils import JobPaths

        if self.executor.cluster != "local":
            yield
            return
        folder = JobPaths.get_first_id_independent_folder(self.executor.folder)
        folder.mkdir(parents=True, exist_ok=True)
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            with open(folder / CONTROLLER_LOG, "ab") as log:
                os.dup2(log.fileno(), 2)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def ended(job: Any, submitted: float) -> bool:
    """Whether ``job`` (submitted at ``submitted``, a ``time.time()``) has ended: its result file is
    there, or its process (SLURM job) is gone.

    submitit writes the result file atomically before the job's interpreter shuts down, and a
    local job's shutdown (torch, MLflow) takes seconds that the next job can use; ``done()`` of a
    local job waits for the process to exit."""
    return _result_file(job, submitted) is not None or job.done()


def _result_file(job: Any, submitted: float) -> Path | None:
    """The result file this job wrote, if any. Only single-task jobs, and only a file written after the
    submission: a local job's folder is named by its controller's pid, which the system may reuse."""
    if getattr(job, "num_tasks", 1) != 1:
        return None
    path = Path(job.paths.result_pickle)
    try:
        return path if path.stat().st_mtime >= submitted else None
    except FileNotFoundError:
        return None


def _finished_return(job: Any, submitted: float) -> Any | None:
    """The task's return (Hydra's ``JobReturn``) read straight from the result file of a job that
    finished without raising in submitit, else None (``job.results()`` then waits for the process)."""
    import pickle

    from submitit.core.utils import pickle_load

    path = _result_file(job, submitted)
    if path is None:
        return None
    try:
        outcome, value = pickle_load(path)
    except (EOFError, pickle.UnpicklingError, OSError):  # seen before its contents on a shared filesystem
        return None
    return value if outcome == "success" else None


def read_outcome(job: Any, seconds: float, submitted: float) -> Outcome:
    """What a finished job gave: its task's return value, the exception it raised, or why it died."""
    from hydra.core.utils import JobStatus

    log = Path(job.paths.stderr)
    try:
        job_return = _finished_return(job, submitted)
        if job_return is None:
            job_return = job.results()[0]
    except Exception as error:  # the job died: killed, cancelled, out of memory, timed out
        return Outcome(False, None, f"{type(error).__name__}: {error}\njob state: {job.state}", log, seconds)
    if job_return.status == JobStatus.COMPLETED:
        return Outcome(True, job_return.return_value, "", log, seconds)
    # ``return_value`` would re-raise and print Hydra's own message; the exception is all we need.
    failure = job_return._return_value
    return Outcome(False, None, f"{type(failure).__name__}: {failure}", log, seconds)
