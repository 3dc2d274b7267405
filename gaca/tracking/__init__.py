"""MLflow tracking: the store, run identity, and the run logger (the contract is ``gaca.contract``)."""

from gaca.tracking.identity import run_key
from gaca.tracking.store import prepare_store, resolve_tracking_uri

__all__ = ["prepare_store", "resolve_tracking_uri", "run_key"]
