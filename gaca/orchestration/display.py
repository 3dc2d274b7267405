"""Plain-text output of the drivers: progress while jobs run, and failure reports (tables: ``gaca.text``)."""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

TRACEBACK_LINES = 12
"""Lines of a failed job's traceback shown in a summary (the log has all of it)."""
HEARTBEAT_S = 30.0
"""Without a terminal, a progress line at least this often."""
PACE_UNKNOWN = "once iterations are timed"
"""The ETA's text before any pace is measured."""
TAIL_BYTES = 8192
"""How much of the end of a job's log is read for its last iteration line."""


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def error_excerpt(error: str, lines: int = TRACEBACK_LINES) -> str:
    """The end of an error's text (a traceback ends with the exception), indented."""
    kept = [line for line in error.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(f"      {line}" for line in kept)


class Progress:
    """A sweep's progress: a line per finished run; iterations done over all runs with an ETA, as a
    tqdm bar when the stream is a terminal, else as a plain line every ``HEARTBEAT_S``."""

    def __init__(
        self,
        runs: int,
        iterations: int,
        stream: TextIO = sys.stderr,
        slots: int | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        """``slots``: jobs that run at once (None: every job at once, as a SLURM array); ``now``: the clock."""
        from tqdm import tqdm

        self.total = runs
        self.iterations = iterations
        self.slots = slots
        self.now = now
        self.done = self.failed = 0
        self.iterations_done = 0
        self.began = self.last_line = now()
        self.first_seen: tuple[float, int] | None = None
        """When iterations were first seen trained, and how many: the pace is measured from there, since a
        sweep's first minutes go to cloning the starting policies and count no iteration."""
        self.trained = 0
        """Iterations seen trained while the sweep watched (a resumed run's checkpointed ones excluded)."""
        self.job_seconds = 0.0
        """Seconds of running jobs summed since ``first_seen``: the pace of one job is measured over them."""
        self.last_tick: tuple[float, int] | None = None
        self.left: tuple[Sequence[int], Sequence[int]] | None = None
        """Iterations left in each running and in each queued run, when the driver gives them."""
        self.stream = stream
        terminal = stream.isatty()
        sized = terminal and _width_known()  # a terminal that does not say its width gets a 100-column bar
        self.bar = tqdm(
            total=iterations,
            unit="it",
            desc="sweep",
            disable=not terminal,
            file=stream,
            dynamic_ncols=sized,
            ncols=None if sized else 100,
            # tqdm's own time left assumes the sweep's pace holds: the postfix has the slot-aware ETA
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]",
        )

    def event(self, text: str, ok: bool) -> None:
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.line(f"{'done  ' if ok else 'FAILED'} {self.done + self.failed}/{self.total}  {text}")

    def line(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(f"[{clock(self.now() - self.began)}] {text}", file=self.stream)
        self.last_line = self.now()

    def eta(self) -> str:
        left = self.seconds_left()
        return f"ETA {PACE_UNKNOWN}" if left is None else f"ETA {clock(left)}"

    def seconds_left(self) -> float | None:
        """Time left; None until iterations are seen trained at two looks (the first minutes go to cloning
        the starting policies, so the pace since the start would say hours). With the iterations left per
        run: each job at the pace of one job since then, the queued runs taking the first slot that frees,
        so a lone last job reads at its own pace, not at that of all slots; else at the sweep's pace."""
        if self.first_seen is None:
            return None
        since, before = self.first_seen
        gained = self.trained - before
        if gained <= 0:
            return None
        if self.left is not None and self.job_seconds > 0:
            return makespan(*self.left, self.slots, self.job_seconds / gained)
        return (self.now() - since) * (self.iterations - self.iterations_done) / gained

    def tick(
        self,
        running: int,
        queued: int,
        iterations_done: int,
        left: tuple[Sequence[int], Sequence[int]] | None = None,
        trained: int | None = None,
        starting: Sequence[str] = (),
    ) -> None:
        """``left``: iterations left in each running run and in each queued one (a queued resumable run
        counts all of its iterations); ``trained``: iterations trained while watched (default: all done);
        ``starting``: what each running job that has not trained yet is doing ("seed=0: cloning ...")."""
        now = self.now()
        self.iterations_done = min(iterations_done, self.iterations)
        self.trained = self.iterations_done if trained is None else trained
        self.left = left
        if self.first_seen is not None and self.last_tick is not None:
            previous, jobs = self.last_tick
            self.job_seconds += jobs * (now - previous)
        if self.trained and self.first_seen is None:
            self.first_seen = (now, self.trained)
        if self.first_seen is not None:
            self.last_tick = (now, running)
        self.bar.update(self.iterations_done - self.bar.n)
        seconds = self.seconds_left()
        self.bar.set_postfix(
            runs=f"{self.done}/{self.total}",
            running=running,
            queued=queued,
            failed=self.failed,
            eta=PACE_UNKNOWN if seconds is None else clock(seconds),
            **({"starting": "; ".join(starting)} if starting else {}),
            refresh=True,
        )
        if self.bar.disable and now - self.last_line > HEARTBEAT_S:
            share = self.iterations_done / max(self.iterations, 1)
            self.line(
                f"{self.iterations_done}/{self.iterations} iterations ({share:.0%}), {self.eta()}; "
                f"{self.done} runs done, {self.failed} failed, {running} running, {queued} queued"
                + "".join(f"; {line}" for line in starting)
            )

    def close(self) -> float:
        self.bar.close()
        return self.now() - self.began


def makespan(running: Sequence[float], queued: Sequence[float], slots: int | None, pace: float = 1.0) -> float:
    """When the last job ends: the running jobs' work left, then each queued job in the first slot that
    frees (``slots`` None: all at once), work times ``pace`` (the ETA: iterations x seconds an
    iteration; the planner: minutes a run)."""
    width = len(running) + len(queued) if slots is None else max(slots, 1)
    free = sorted(work * pace for work in running)
    free = [0.0] * max(width - len(free), 0) + free
    heapq.heapify(free)
    for work in queued:
        heapq.heappush(free, heapq.heappop(free) + work * pace)
    return max(free, default=0.0)


def _width_known() -> bool:
    import shutil

    return shutil.get_terminal_size(fallback=(0, 0)).columns > 0


def _tail(log: Path) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, log.stat().st_size - TAIL_BYTES))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def last_iteration(log: Path) -> int:
    """The last iteration a run's job log reports (``gaca.backends.cpu.progress.ITERATION_LINE``), else 0."""
    from gaca.backends.cpu.progress import ITERATION_LINE

    found = ITERATION_LINE.findall(_tail(log))
    return int(found[-1][0]) if found else 0


def starting_now(log: Path) -> str | None:
    """What a job that has not trained an iteration yet does to build its starting policy (its log's last
    ``STARTING_LINE``: "cloning 300/500 updates"), None once it trains or when it says nothing."""
    from gaca.backends.cpu.progress import ITERATION_LINE, STARTING_LINE

    tail = _tail(log)
    found = list(STARTING_LINE.finditer(tail))
    if not found or ITERATION_LINE.search(tail, found[-1].end()):
        return None
    return found[-1].group(1).strip()


def describe_log(log: Path | None) -> str:
    return f"log: {log}" if log else "log: (none)"
