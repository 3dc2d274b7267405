"""Progress of one run: a bar with iteration, success rate, rate and ETA on a terminal, else one
plain line per iteration (a sweep job's log; the sweep driver reads ``ITERATION_LINE`` back)."""

from __future__ import annotations

import re
import sys
import time

from tqdm import tqdm

ITERATION_LINE = re.compile(r"^gaca train: iteration (\d+)/(\d+)\b", re.MULTILINE)
"""The per-iteration line without a terminal: ``gaca train: iteration 3/25 ...``."""
STARTING_LINE = re.compile(r"^gaca train: starting policy: (.+)$", re.MULTILINE)
"""What a job does before its first iteration: ``gaca train: starting policy: cloning 300/500 updates``."""
STARTING_EVERY = 50
"""Updates between two starting-policy lines."""


def starting(what: str) -> None:
    """One ``STARTING_LINE`` on stderr (a sweep shows the last one of each job that has not yet trained)."""
    print(f"gaca train: starting policy: {what}", file=sys.stderr, flush=True)


class Progress:
    def __init__(self, total: int, start: int = 0, quiet: bool | None = None) -> None:
        self.terminal = sys.stderr.isatty()
        self.quiet = False if quiet is None else quiet
        self.bar = tqdm(
            total=total,
            initial=start,
            unit="it",
            desc="train",
            disable=self.quiet or not self.terminal,
            dynamic_ncols=True,
        )
        self.total = total
        self.start = start
        self.began = time.monotonic()
        self.last_eval: float | None = None

    def update(self, iteration: int, train_success: float, eval_success: float | None) -> None:
        if eval_success is not None:
            self.last_eval = eval_success
        postfix = {"success": f"{train_success:.2f}"}
        if self.last_eval is not None:
            postfix["eval"] = f"{self.last_eval:.2f}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(iteration - self.bar.n)
        if self.quiet or self.terminal:
            return
        per_iteration = (time.monotonic() - self.began) / max(iteration - self.start, 1)
        shown = " ".join(f"{name} {value}" for name, value in postfix.items())
        eta = per_iteration * (self.total - iteration)
        print(
            f"gaca train: iteration {iteration}/{self.total}  {shown}  ({per_iteration:.1f} s/it, {eta:.0f} s to go)",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        self.bar.close()
