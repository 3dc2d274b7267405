"""Where a run is logged (``tracking.*``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrackingConfig:
    """Where a run is logged (MLflow). Not part of the run's identity."""

    experiment: str = "gaca"
    """MLflow experiment name."""
    uri: str | None = None
    """Tracking URI; None = $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working folder."""

    def __post_init__(self) -> None:
        if not isinstance(self.experiment, str) or not self.experiment.strip():
            raise ValueError(f"tracking.experiment must be a non-empty string, got {self.experiment!r}")
