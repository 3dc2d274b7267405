"""Plain-text output of the drivers: tables, progress while jobs run, and failure reports."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Sequence, TextIO

TRACEBACK_LINES = 12
"""Lines of a failed job's traceback shown in a summary (the log has all of it)."""
HEARTBEAT_S = 60.0
"""Without a terminal, a progress line at least this often."""


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
    """Counts of a batch of jobs; a line per event, and a tqdm bar when stderr is a terminal."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        from tqdm import tqdm

        self.total = total
        self.done = self.failed = 0
        self.began = self.last_line = time.monotonic()
        self.stream = stream
        terminal = stream.isatty()
        self.bar = tqdm(total=total, unit="run", desc="sweep", disable=not terminal, file=stream, dynamic_ncols=True)

    def event(self, text: str, ok: bool) -> None:
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.line(f"{'done  ' if ok else 'FAILED'} {self.done + self.failed}/{self.total}  {text}")
        self.bar.update(1)

    def line(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(f"[{clock(time.monotonic() - self.began)}] {text}", file=self.stream)
        self.last_line = time.monotonic()

    def tick(self, running: int, queued: int) -> None:
        self.bar.set_postfix(running=running, queued=queued, failed=self.failed, refresh=True)
        if self.bar.disable and time.monotonic() - self.last_line > HEARTBEAT_S:
            self.line(f"{self.done} done, {self.failed} failed, {running} running, {queued} queued")

    def close(self) -> float:
        self.bar.close()
        return time.monotonic() - self.began


def describe_log(log: Path | None) -> str:
    return f"log: {log}" if log else "log: (none)"
