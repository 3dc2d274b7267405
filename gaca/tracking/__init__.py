"""MLflow tracking: the store, run identity, and the run logger (the tracking contract in README.md)."""

from gaca.tracking.identity import canonical_config, run_key
from gaca.tracking.store import prepare_store, resolve_tracking_uri

__all__ = ["canonical_config", "prepare_store", "resolve_tracking_uri", "run_key"]
