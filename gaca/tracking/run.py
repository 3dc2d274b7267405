"""One training run's MLflow record: found or created by run key, logged in batches, closed once.

Every call to a tracking server or a PostgreSQL store goes through ``patiently``: when the store does
not answer (a server or database restarting, a network cut), the call is retried with backoff, on top
of MLflow's own retries of each request, for up to ``GACA_TRACKING_PATIENCE_S`` seconds (default
``DEFAULT_PATIENCE_S``) from the first failure; then the run fails with one line
(``TrackingUnreachable``) and stays unfinished in MLflow, so that rerunning the sweep resumes it. A
retried call logs nothing twice: a metric batch carries its own timestamps (MLflow keeps one copy of
an identical point), an artifact overwrites itself, and a run whose creation was retried is looked up
by its key before it is created again. An SQLite store never waits: its errors are raised at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gaca.contract import PROGRESS_METRICS, TAG_GIT_COMMIT, TAG_RUN_KEY
from gaca.tracking.secrets import redact_params, redact_text
from gaca.tracking.store import StoreUnavailable, prepare_store

MAX_PARAMS_PER_CALL = 100  # MLflow's log_batch limit
PATIENCE_VARIABLE = "GACA_TRACKING_PATIENCE_S"
DEFAULT_PATIENCE_S = 600.0
"""How long a run keeps retrying a tracking store that does not answer before it fails (10 min: a
server or database restart takes seconds to a minute; a store down longer needs a person)."""
MAX_BACKOFF_S = 30.0
UNAVAILABLE_STATUSES = frozenset({500, 502, 503, 504})
"""HTTP statuses of a server that is restarting or has lost its database (MLflow retried them already)."""
UNAVAILABLE_SIGNS = ("Max retries exceeded", "Connection refused", "OperationalError", "QueuePool limit")
"""In an MLflow error's text: no answer after MLflow's retries, or a server whose database connections
are all busy (its SQLAlchemy pool times out after 30 s and answers 400, which MLflow does not retry)."""
Result = TypeVar("Result")


class TrackingUnreachable(StoreUnavailable):
    """The tracking store did not answer for longer than the patience: the run fails, to be resumed."""


def patience_s() -> float:
    return float(os.environ.get(PATIENCE_VARIABLE, DEFAULT_PATIENCE_S))


def remote(uri: str) -> bool:
    """Whether the store of ``uri`` is reached over the network (a server or a database server)."""
    from gaca.tracking.postgres import is_postgres

    return uri.startswith(("http://", "https://")) or is_postgres(uri)


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says that the store did not answer (not that it refused the request)."""
    import requests
    from mlflow.exceptions import MlflowException

    if isinstance(error, (requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError)):
        return True
    if isinstance(error, MlflowException):
        if error.get_http_status_code() in UNAVAILABLE_STATUSES and "RESOURCE_DOES_NOT_EXIST" not in str(error):
            return True
        text = str(error)
        return any(sign in text for sign in UNAVAILABLE_SIGNS)
    return type(error).__name__ == "OperationalError"  # SQLAlchemy's or the driver's, for a PostgreSQL store


def patiently(call: Callable[[], Result], uri: str, what: str) -> Result:
    """``call()``, retried with backoff while the remote store of ``uri`` does not answer, for up to
    ``patience_s()`` from the first failure; ``TrackingUnreachable`` (one line) after that."""
    if not remote(uri):
        return call()
    from gaca.tracking.secrets import redact_uri

    first_failure: float | None = None
    delay = 1.0
    while True:
        try:
            result = call()
        except Exception as error:
            if not unreachable(error):
                raise
            now = time.monotonic()
            if first_failure is None:
                first_failure = now
                print(
                    f"gaca: the MLflow store {redact_uri(uri)} does not answer ({what}); retrying for up to "
                    f"{patience_s():.0f} s ({PATIENCE_VARIABLE})",
                    file=sys.stderr,
                    flush=True,
                )
            waited = now - first_failure
            if waited >= patience_s():
                raise TrackingUnreachable(
                    f"the MLflow store {redact_uri(uri)} did not answer for {waited:.0f} s ({what}); the run stays "
                    "unfinished in MLflow: rerun the sweep (or gaca train) once the store is back to resume it"
                ) from None
            time.sleep(min(delay, max(patience_s() - waited, 0.1)))
            delay = min(2 * delay, MAX_BACKOFF_S)
            continue
        if first_failure is not None:
            print(
                f"gaca: the MLflow store answers again after {time.monotonic() - first_failure:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        return result


def git_commit() -> str:
    """The commit of the checkout the package runs from, or 'unknown' outside git."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class ArtifactWriteError(RuntimeError):
    """An artifact that could not be written to the run's artifact store."""


@dataclass
class ExistingRun:
    run_id: str
    status: str  # FINISHED, RUNNING, FAILED, KILLED, SCHEDULED


def find_run(client: MlflowClient, experiment_id: str, key: str) -> ExistingRun | None:
    """The newest run tagged with ``gaca.run_key = key``; a FINISHED one wins over newer unfinished ones."""
    runs = client.search_runs(
        [experiment_id], filter_string=f"tags.`{TAG_RUN_KEY}` = '{key}'", order_by=["attributes.start_time DESC"]
    )
    if not runs:
        return None
    finished = [r for r in runs if r.info.status == "FINISHED"]
    chosen = finished[0] if finished else runs[0]
    return ExistingRun(chosen.info.run_id, chosen.info.status)


class RunLogger:
    """Logs one run: params and tags once, metrics per iteration in one ``log_batch`` call each.

    Resuming a run that died continues the same MLflow run; metric steps it already logged are
    not logged again, so a resumed run's curves have no duplicated points.
    """

    def __init__(self, client: MlflowClient, run_id: str, logged_until: int, uri: str = "") -> None:
        self.client = client
        self.run_id = run_id
        self.logged_until = logged_until
        self.uri = uri

    @classmethod
    def open(
        cls,
        uri: str,
        experiment: str,
        key: str,
        run_name: str,
        tags: Mapping[str, str],
        params: Mapping[str, str],
        resume_run_id: str | None = None,
    ) -> RunLogger:
        """Create the run (or reopen ``resume_run_id``) after everything has been validated; secrets in
        ``params`` are masked (``gaca.tracking.secrets``)."""
        client = MlflowClient(tracking_uri=uri)
        experiment_id = patiently(lambda: prepare_store(uri, experiment), uri, "opening the experiment")
        if resume_run_id is not None:
            patiently(lambda: client.update_run(resume_run_id, status="RUNNING"), uri, "reopening the run")
            steps = patiently(
                lambda: [m.step for name in PROGRESS_METRICS for m in client.get_metric_history(resume_run_id, name)],
                uri,
                "reading the logged steps",
            )
            return cls(client, resume_run_id, max(steps, default=-1), uri)
        all_tags = {TAG_RUN_KEY: key, TAG_GIT_COMMIT: git_commit(), **tags}
        attempts: list[int] = []

        def create() -> str:
            if attempts:  # an earlier attempt may have created it before its answer was lost
                found = find_run(client, experiment_id, key)
                if found is not None:
                    return found.run_id
            attempts.append(1)
            return client.create_run(experiment_id, run_name=run_name, tags=all_tags).info.run_id

        run_id = patiently(create, uri, "creating the run")
        items = [Param(k, v) for k, v in redact_params(params).items()]
        for start in range(0, len(items), MAX_PARAMS_PER_CALL):
            batch = items[start : start + MAX_PARAMS_PER_CALL]

            def log_params(batch: list[Param] = batch) -> None:
                client.log_batch(run_id, params=batch)

            patiently(log_params, uri, "logging the params")
        return cls(client, run_id, -1, uri)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """All ``metrics`` of one step in one call; a step logged before a resume is skipped."""
        if step <= self.logged_until and not any(k.startswith("final/") for k in metrics):
            return
        timestamp = int(time.time() * 1000)  # fixed before the call: a retried batch is the same points
        batch = [Metric(k, float(v), timestamp, step) for k, v in metrics.items()]
        patiently(lambda: self.client.log_batch(self.run_id, metrics=batch), self.uri, f"logging step {step}")

    def log_text(self, text: str, artifact_file: str) -> None:
        """A text artifact (the run's config.yaml, outcomes, transcripts), secrets masked; a write that
        fails (a full disk, a read-only folder) is an ``ArtifactWriteError`` naming where it went."""
        try:
            patiently(
                lambda: self.client.log_text(self.run_id, redact_text(text), artifact_file),
                self.uri,
                f"writing {artifact_file}",
            )
        except OSError as error:
            where = error.filename or f"{self.client.get_run(self.run_id).info.artifact_uri}/{artifact_file}"
            raise ArtifactWriteError(
                f"cannot write artifact {artifact_file} of MLflow run {self.run_id} to {where} "
                f"({error.strerror or error}); free space (or make the folder writable) and rerun"
            ) from None

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        """A file as an artifact (a checkpoint-sized blob, say), retried like every other call."""
        patiently(
            lambda: self.client.log_artifact(self.run_id, str(path), artifact_path), self.uri, f"writing {path.name}"
        )

    def log_tags(self, tags: Mapping[str, str]) -> None:
        batch = [RunTag(k, v) for k, v in tags.items()]
        patiently(lambda: self.client.log_batch(self.run_id, tags=batch), self.uri, "logging tags")

    def finish(self, status: str = "FINISHED") -> None:
        patiently(lambda: self.client.set_terminated(self.run_id, status=status), self.uri, f"ending the run {status}")
