"""The MLflow store: where it is, and creating it once before any job opens it."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STORE = "mlflow.db"


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else an SQLite file in the working folder."""
    if uri:
        return uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    return f"sqlite:///{Path.cwd() / DEFAULT_STORE}"


def prepare_store(uri: str, experiment: str) -> str:
    """Create the store's schema and the experiment if needed; return the experiment id.

    Called once by whoever starts work (a run, or a sweep's driver) before any job logs:
    several processes creating a fresh SQLite store at once corrupt it (FACTS.md).
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        return found.experiment_id
    try:
        return client.create_experiment(experiment)
    except Exception:  # another driver created it first
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise
        return found.experiment_id
