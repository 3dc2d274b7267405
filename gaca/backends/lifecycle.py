"""One run's life in MLflow, the same for every backend: found by its key and skipped when it has
finished; otherwise created (or the unfinished one reopened, to be resumed) with the contract's tags,
params and config; at the end FINISHED, KILLED (stopped, to be resumed) or FAILED."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gaca.backends.result import TrainResult
from gaca.contract import CONFIG_ARTIFACT

if TYPE_CHECKING:
    from gaca.backends.config import RunConfig
    from gaca.tracking.run import RunLogger


class Stopped(RuntimeError):
    """Stops a run as a preemption does (``train(..., stop_after=i)`` after iteration i's checkpoint)."""


STOPPED = (KeyboardInterrupt, SystemExit, Stopped)
"""What ends a run KILLED, to be resumed: Ctrl-C, a preemption (SLURM's signal reaches the job through
submitit, which requeues it and exits: SystemExit) and a simulated one. Any other error ends it FAILED."""


def end_status(error: BaseException) -> str:
    """The MLflow status of a run that ``error`` ended."""
    return "KILLED" if isinstance(error, STOPPED) else "FAILED"


@dataclass(frozen=True)
class OpenRun:
    key: str
    """The run's ``gaca.run_key``."""
    uri: str
    """The resolved tracking URI."""
    logger: RunLogger
    resumed: bool
    """True when an unfinished run was reopened (its checkpoint may be resumed)."""


def open_or_skip(run: RunConfig, resolved: dict[str, Any]) -> OpenRun | TrainResult:
    """The run of ``resolved`` opened in MLflow, or a skipped ``TrainResult`` when it has finished."""
    from mlflow.tracking import MlflowClient
    from omegaconf import OmegaConf

    from gaca.contract import flatten
    from gaca.tracking.backup import hold_in_use
    from gaca.tracking.identity import run_key
    from gaca.tracking.run import RunLogger, find_run, patiently
    from gaca.tracking.store import prepare_store, resolve_tracking_uri, sqlite_path
    from gaca.tracking.tags import run_name, run_tags

    key = run_key(resolved)
    uri = resolve_tracking_uri(run.tracking.uri)
    store_file = sqlite_path(uri)
    if store_file is not None:
        hold_in_use(store_file)  # `gaca backup restore` waits for this process to end
    experiment_id = patiently(lambda: prepare_store(uri, run.tracking.experiment), uri, "opening the experiment")
    client = MlflowClient(tracking_uri=uri)
    existing = patiently(lambda: find_run(client, experiment_id, key), uri, "looking up the run")
    if existing is not None and existing.status == "FINISHED":
        print(f"run {key} is already finished in MLflow (run {existing.run_id}); skipping", file=sys.stderr)
        return TrainResult(existing.run_id, key, None, skipped=True)
    logger = RunLogger.open(
        uri,
        run.tracking.experiment,
        key,
        run_name(run, key),
        run_tags(run),
        flatten(resolved),
        resume_run_id=existing.run_id if existing else None,
    )
    if existing is None:
        logger.log_text(OmegaConf.to_yaml(OmegaConf.create(resolved)), CONFIG_ARTIFACT)
    return OpenRun(key, uri, logger, resumed=existing is not None)


@contextmanager
def finishing(logger: RunLogger) -> Iterator[None]:
    """Ends the run FINISHED when the block completes, else with ``end_status`` of its error (a store
    that stopped answering is not asked again: the run stays unfinished there, to be resumed)."""
    from gaca.tracking.run import TrackingUnreachable

    try:
        yield
    except TrackingUnreachable:
        raise
    except BaseException as error:
        logger.finish(end_status(error))
        raise
    logger.finish("FINISHED")
