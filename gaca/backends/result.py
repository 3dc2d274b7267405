"""What training a run reports, whichever backend trained it (``gaca train`` prints it, sweep jobs return it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainResult:
    run_id: str | None
    run_key: str
    final_eval_success: float | None
    skipped: bool = False
    """True when a finished run with the same key was already in MLflow."""
    curve: list[tuple[int, float]] | None = None
    """(iteration, eval success) of this invocation's evaluations."""
