"""One training run's MLflow record: found or created by run key, logged in batches, closed once."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gaca.contract import PROGRESS_METRICS, TAG_GIT_COMMIT, TAG_RUN_KEY
from gaca.tracking.secrets import redact_params, redact_text
from gaca.tracking.store import prepare_store

MAX_PARAMS_PER_CALL = 100  # MLflow's log_batch limit


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

    def __init__(self, client: MlflowClient, run_id: str, logged_until: int) -> None:
        self.client = client
        self.run_id = run_id
        self.logged_until = logged_until

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
        experiment_id = prepare_store(uri, experiment)
        if resume_run_id is not None:
            client.update_run(resume_run_id, status="RUNNING")
            steps = [m.step for key in PROGRESS_METRICS for m in client.get_metric_history(resume_run_id, key)]
            return cls(client, resume_run_id, max(steps, default=-1))
        all_tags = {TAG_RUN_KEY: key, TAG_GIT_COMMIT: git_commit(), **tags}
        run = client.create_run(experiment_id, run_name=run_name, tags=all_tags)
        items = [Param(k, v) for k, v in redact_params(params).items()]
        for start in range(0, len(items), MAX_PARAMS_PER_CALL):
            client.log_batch(run.info.run_id, params=items[start : start + MAX_PARAMS_PER_CALL])
        return cls(client, run.info.run_id, -1)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """All ``metrics`` of one step in one call; a step logged before a resume is skipped."""
        if step <= self.logged_until and not any(k.startswith("final/") for k in metrics):
            return
        timestamp = int(time.time() * 1000)
        batch = [Metric(k, float(v), timestamp, step) for k, v in metrics.items()]
        self.client.log_batch(self.run_id, metrics=batch)

    def log_text(self, text: str, artifact_file: str) -> None:
        """A text artifact (the run's config.yaml, outcomes, transcripts), secrets masked; a write that
        fails (a full disk, a read-only folder) is an ``ArtifactWriteError`` naming where it went."""
        try:
            self.client.log_text(self.run_id, redact_text(text), artifact_file)
        except OSError as error:
            where = error.filename or f"{self.client.get_run(self.run_id).info.artifact_uri}/{artifact_file}"
            raise ArtifactWriteError(
                f"cannot write artifact {artifact_file} of MLflow run {self.run_id} to {where} "
                f"({error.strerror or error}); free space (or make the folder writable) and rerun"
            ) from None

    def log_tags(self, tags: Mapping[str, str]) -> None:
        self.client.log_batch(self.run_id, tags=[RunTag(k, v) for k, v in tags.items()])

    def finish(self, status: str = "FINISHED") -> None:
        self.client.set_terminated(self.run_id, status=status)
