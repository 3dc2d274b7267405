"""Plain-text output of the drivers: tables, progress while jobs run, and failure reports."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

TRACEBACK_LINES = 12
"""Lines of a failed job's traceback shown in a summary (the log has all of it)."""
HEARTBEAT_S = 30.0
"""Without a terminal, a progress line at least this often."""
TAIL_BYTES = 8192
"""How much of the end of a job's log is read for its last iteration line."""


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths)) + "  " + row[-1] for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


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

    def __init__(self, runs: int, iterations: int, stream: TextIO = sys.stderr) -> None:
        from tqdm import tqdm

        self.total = runs
        self.iterations = iterations
        self.done = self.failed = 0
        self.iterations_done = 0
        self.began = self.last_line = time.monotonic()
        self.first_seen: tuple[float, int] | None = None
        """When iterations were first seen done, and how many: the pace is measured from there, since a
        sweep's first minutes go to cloning the starting policies and count no iteration."""
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
        )

    def event(self, text: str, ok: bool) -> None:
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.line(f"{'done  ' if ok else 'FAILED'} {self.done + self.failed}/{self.total}  {text}")

    def line(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(f"[{clock(time.monotonic() - self.began)}] {text}", file=self.stream)
        self.last_line = time.monotonic()

    def eta(self) -> str:
        """Time left at the pace since iterations were first seen done, or, until more are, at the pace
        since the start (resumed runs' earlier iterations count as done: a lower bound)."""
        if not self.iterations_done or self.first_seen is None:
            return "ETA after the first iteration"
        left = self.iterations - self.iterations_done
        since, before = self.first_seen
        if self.iterations_done > before:
            return f"ETA {clock((time.monotonic() - since) * left / (self.iterations_done - before))}"
        return f"ETA {clock((time.monotonic() - self.began) * left / self.iterations_done)}"

    def tick(self, running: int, queued: int, iterations_done: int) -> None:
        self.iterations_done = min(iterations_done, self.iterations)
        if self.iterations_done and self.first_seen is None:
            self.first_seen = (time.monotonic(), self.iterations_done)
        self.bar.update(self.iterations_done - self.bar.n)
        self.bar.set_postfix(
            runs=f"{self.done}/{self.total}", running=running, queued=queued, failed=self.failed, refresh=True
        )
        if self.bar.disable and time.monotonic() - self.last_line > HEARTBEAT_S:
            share = self.iterations_done / max(self.iterations, 1)
            self.line(
                f"{self.iterations_done}/{self.iterations} iterations ({share:.0%}), {self.eta()}; "
                f"{self.done} runs done, {self.failed} failed, {running} running, {queued} queued"
            )

    def close(self) -> float:
        self.bar.close()
        return time.monotonic() - self.began


def _width_known() -> bool:
    import shutil

    return shutil.get_terminal_size(fallback=(0, 0)).columns > 0


def last_iteration(log: Path) -> int:
    """The last iteration a run's job log reports (``gaca.backends.cpu.progress.ITERATION_LINE``), else 0."""
    from gaca.backends.cpu.progress import ITERATION_LINE

    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, log.stat().st_size - TAIL_BYTES))
            tail = handle.read().decode(errors="replace")
    except OSError:
        return 0
    found = ITERATION_LINE.findall(tail)
    return int(found[-1][0]) if found else 0


def describe_log(log: Path | None) -> str:
    return f"log: {log}" if log else "log: (none)"
