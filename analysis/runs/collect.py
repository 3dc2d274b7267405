"""MLflow -> tidy pandas frames: one row per run, per (run, metric, step), per (run, evaluation task).

Reads any tracking URI (SQLite or a server) through MLflow's own client and stores. Metric
histories are read in bulk (one query per 500 runs on a SQL store, one request per metric and 100
runs on a server), never run by run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

import mlflow
import pandas as pd
import sqlalchemy
from mlflow.exceptions import MlflowException
from mlflow.store.tracking.dbmodels.models import SqlMetric
from mlflow.store.tracking.rest_store import RestStore
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
from mlflow.tracking import MlflowClient
from mlflow.utils.rest_utils import http_request

from gaca import contract
from gaca.contract import CRITICALITY_HISTOGRAM, DIAGNOSTIC_METRICS, outcomes_artifact, parse_param

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "gaca"

FINAL_METRIC = contract.FINAL_EVAL_SUCCESS_RATE
EVAL_METRIC = contract.EVAL_SUCCESS_RATE
CURVE_METRICS = (EVAL_METRIC, *DIAGNOSTIC_METRICS)
"""The histories the report reads; the other logged metrics are not needed for the paper."""
OUTCOME_COLUMNS = ("task_id", "success")
"""Columns of an ``eval/outcomes_*.csv`` artifact the report needs (it also has iteration, return,
length, and an ``episode`` column when a task is evaluated several times: one row per episode)."""

TAG_COLUMNS = {
    contract.TAG_RUN_KEY: "run_key",
    contract.TAG_BLOCK: "block",
    contract.TAG_METHOD: "method",
    contract.TAG_ENV: "env",
    contract.TAG_SCALE: "scale",
    contract.TAG_SEED: "seed",
    contract.TAG_GIT_COMMIT: "git_commit",
}
TAG_FALLBACK_PARAMS = {"env": "env.name", "scale": "model.name", "seed": "seed", "method": "algorithm.method"}
"""Where a run without the tag still says the same thing in its params."""

PARAM_PREFIX = "params."
SQL_CHUNK = 500  # run ids per SQL query; far below SQLite's bound-variable limit
REST_CHUNK = 100  # the tracking server's limit for metrics/get-history-bulk
REST_MAX_RESULTS = 25_000  # the server's cap on points per bulk answer
DOWNLOAD_THREADS = 8


def resolve_tracking_uri(explicit: str | None = None) -> str:
    """``--tracking-uri``, else ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` here."""
    return explicit or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def load_runs(client: MlflowClient, experiment: str) -> pd.DataFrame:
    """Every run of ``experiment``, one row each, newest first.

    Columns: ``run_id, status, start_time, artifact_uri, final`` (``final/eval_success_rate`` or NaN),
    one column per ``gaca.*`` tag (``run_key, block, method, env, scale, seed, git_commit``; None
    when absent), ``sequential`` (block -> look schedule, from the ``gaca.sequential.<block>`` tags)
    and ``params.<dotted key>`` for every param, parsed. Raises ``LookupError`` naming
    the known experiments when ``experiment`` does not exist. Runs of other experiments are never read.
    """
    found = client.get_experiment_by_name(experiment)
    if found is None:
        known = sorted(e.name for e in client.search_experiments())
        raise LookupError(f"no MLflow experiment {experiment!r} at {client.tracking_uri}; known: {known or 'none'}")
    rows: list[dict[str, object]] = []
    page_token = None
    while True:
        page = client.search_runs([found.experiment_id], max_results=1000, page_token=page_token)
        rows.extend(_run_row(run) for run in page)
        page_token = page.token
        if not page_token:
            break
    columns = ["run_id", "status", "start_time", "artifact_uri", "final", *TAG_COLUMNS.values(), "sequential"]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame["start_time"] = pd.to_datetime(frame["start_time"], unit="ms")
    return frame.sort_values("start_time", ascending=False, ignore_index=True)


def _run_row(run: mlflow.entities.Run) -> dict[str, object]:
    params = {key: parse_param(value) for key, value in run.data.params.items()}
    row: dict[str, object] = {
        "run_id": run.info.run_id,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "artifact_uri": run.info.artifact_uri,
        "final": run.data.metrics.get(FINAL_METRIC, float("nan")),
    }
    for tag, column in TAG_COLUMNS.items():
        value: object = run.data.tags.get(tag)
        if value is None and column in TAG_FALLBACK_PARAMS:
            value = params.get(TAG_FALLBACK_PARAMS[column])
        row[column] = parse_param(value) if column == "seed" and isinstance(value, str) else value
    row["seed"] = row["seed"] if isinstance(row["seed"], int) and not isinstance(row["seed"], bool) else None
    prefix = contract.TAG_SEQUENTIAL + "."
    row["sequential"] = {tag[len(prefix) :]: value for tag, value in run.data.tags.items() if tag.startswith(prefix)}
    row.update({PARAM_PREFIX + key: value for key, value in params.items()})
    return row


def run_config(run: Mapping[str, object]) -> dict[str, object]:
    """The dotted-key config of one row of ``load_runs`` (its params, without the column prefix); the
    ``/``-separated params verl's own MLflow logger adds to a verl run (its whole trainer config, with
    per-run folders) are not gaca's config."""
    return {
        key[len(PARAM_PREFIX) :]: value
        for key, value in run.items()
        if key.startswith(PARAM_PREFIX) and "/" not in key and not _is_missing(value)
    }


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def auc_by_run(curves: pd.DataFrame) -> pd.Series:
    """Each run's AUC: its mean ``eval/success_rate`` over its evaluations (``load_curves`` frame)."""
    return curves.loc[curves["metric"] == EVAL_METRIC].groupby("run_id")["value"].mean()


def load_curves(client: MlflowClient, run_ids: Sequence[str], metrics: Sequence[str] = CURVE_METRICS) -> pd.DataFrame:
    """Metric histories of ``run_ids`` as a tidy frame ``run_id, metric, step, value``.

    Read in bulk: one query per chunk of runs (SQL store) or one request per metric and chunk
    (tracking server). A step logged twice (a resumed run) keeps the value logged last.
    """
    chunk, read = _bulk_history_reader(client)
    run_ids = list(run_ids)
    frames = [read(run_ids[start : start + chunk], list(metrics)) for start in range(0, len(run_ids), chunk)]
    columns = ["run_id", "metric", "step", "value", "timestamp"]
    curves = pd.concat([f for f in frames if not f.empty] or [pd.DataFrame(columns=columns)], ignore_index=True)
    curves = curves.sort_values("timestamp", kind="stable").drop_duplicates(["run_id", "metric", "step"], keep="last")
    curves = curves.astype({"step": "int64", "value": "float64"})
    return curves.drop(columns="timestamp").sort_values(["run_id", "metric", "step"], ignore_index=True)


HistoryRead = Callable[[list[str], list[str]], pd.DataFrame]
"""``read(run_ids, metrics)`` -> rows ``run_id, metric, step, value, timestamp``."""


def _bulk_history_reader(client: MlflowClient) -> tuple[int, HistoryRead]:
    """The fastest way this client's store has to read many runs' histories, and its chunk of runs."""
    # MLflow's bulk reads are not on the public client (its get_metric_history is one request per
    # run and metric): a SQL store is queried through its own table model, a server through its
    # metrics/get-history-bulk endpoint (the one MLflow's UI uses).
    store = client._tracking_client.store
    if isinstance(store, SqlAlchemyStore):
        return SQL_CHUNK, lambda run_ids, metrics: _sql_history(store, run_ids, metrics)
    if isinstance(store, RestStore):
        return REST_CHUNK, lambda run_ids, metrics: pd.concat([_rest_history(store, run_ids, m) for m in metrics])
    return REST_CHUNK, lambda run_ids, metrics: pd.concat([_threaded_history(client, run_ids, m) for m in metrics])


def _sql_history(store: SqlAlchemyStore, run_ids: list[str], metrics: list[str]) -> pd.DataFrame:
    # A Core select of plain rows: building an ORM object per point is ten times slower.
    query: Any = sqlalchemy.select(  # mlflow's SqlMetric columns are untyped
        SqlMetric.run_uuid.label("run_id"),
        SqlMetric.key.label("metric"),
        SqlMetric.step,
        SqlMetric.value,
        SqlMetric.is_nan,
        SqlMetric.timestamp,
    ).where(SqlMetric.run_uuid.in_(run_ids), SqlMetric.key.in_(metrics))
    with store.engine.connect() as connection:
        frame = pd.read_sql(query, connection)
    frame.loc[frame.pop("is_nan").astype(bool), "value"] = float("nan")  # MLflow stores NaN as a flag
    return frame


def _rest_history(store: RestStore, run_ids: list[str], metric: str) -> pd.DataFrame:
    response = http_request(
        store.get_host_creds(),
        "/ajax-api/2.0/mlflow/metrics/get-history-bulk",
        "GET",
        params={"run_id": run_ids, "metric_key": metric, "max_results": REST_MAX_RESULTS},
    )
    response.raise_for_status()
    points = response.json().get("metrics", [])
    if len(points) >= REST_MAX_RESULTS and len(run_ids) > 1:  # truncated: ask for halves
        half = len(run_ids) // 2
        return pd.concat([_rest_history(store, run_ids[:half], metric), _rest_history(store, run_ids[half:], metric)])
    frame = pd.DataFrame(points, columns=["run_id", "key", "step", "value", "timestamp"])
    return frame.rename(columns={"key": "metric"}).assign(metric=metric)


def _threaded_history(client: MlflowClient, run_ids: list[str], metric: str) -> pd.DataFrame:
    with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
        histories = pool.map(lambda run_id: (run_id, client.get_metric_history(run_id, metric)), run_ids)
        rows = [(run_id, metric, p.step, p.value, p.timestamp) for run_id, points in histories for p in points]
    return pd.DataFrame(rows, columns=["run_id", "metric", "step", "value", "timestamp"])


def load_csv_artifacts(tracking_uri: str, artifacts: Mapping[str, str]) -> dict[str, pd.DataFrame | None]:
    """Read one CSV artifact per run: ``{run_id: full artifact URI}`` -> ``{run_id: frame}``.

    A run whose artifact is absent or unreadable maps to None; the caller reports it. Remote
    stores are read by several threads; local files one after the other (threads would only
    contend for the interpreter there).
    """

    def read(item: tuple[str, str]) -> tuple[str, pd.DataFrame | None]:
        run_id, uri = item
        try:
            path = mlflow.artifacts.download_artifacts(
                artifact_uri=uri,
                dst_path=None if _is_local(uri) else os.path.join(folder, run_id),
                tracking_uri=tracking_uri,
            )
            return run_id, pd.read_csv(path)
        except (MlflowException, OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
            return run_id, None

    with tempfile.TemporaryDirectory() as folder:
        if all(_is_local(uri) for uri in artifacts.values()):
            return dict(map(read, artifacts.items()))
        with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
            return dict(pool.map(read, artifacts.items()))


def _is_local(uri: str) -> bool:
    """A local artifact store hands back its own file (no copy); others download into a folder."""
    return urlparse(uri).scheme in ("", "file")


def artifact_uri(run_artifact_uri: str, path: str) -> str:
    return f"{run_artifact_uri.rstrip('/')}/{path}"


def load_outcomes(tracking_uri: str, selected: pd.DataFrame) -> pd.DataFrame:
    """Per-task evaluation outcomes at each run's selected iteration.

    ``selected`` has ``run_id, artifact_uri, iteration``. Returns ``run_id, iteration, task_id,
    success``, one row per episode (several per task id when the run evaluated each task more than
    once); runs whose ``eval/outcomes_*.csv`` is absent or lacks those columns are left out.
    """
    wanted = selected.dropna(subset=["iteration"])
    requests = {
        row.run_id: artifact_uri(row.artifact_uri, outcomes_artifact(int(row.iteration)))
        for row in wanted.itertuples(index=False)
    }
    iterations = dict(zip(wanted["run_id"], wanted["iteration"].astype(int)))
    frames = {
        run_id: frame.loc[:, list(OUTCOME_COLUMNS)]
        for run_id, frame in load_csv_artifacts(tracking_uri, requests).items()
        if frame is not None and set(OUTCOME_COLUMNS) <= set(frame.columns)
    }
    columns = ["run_id", "iteration", *OUTCOME_COLUMNS]
    if not frames:
        return pd.DataFrame(columns=columns)
    outcomes = pd.concat(frames, names=["run_id", "row"]).reset_index(level="run_id").reset_index(drop=True)
    outcomes["iteration"] = outcomes["run_id"].map(iterations)
    return outcomes.loc[:, columns]


def load_criticality_histograms(tracking_uri: str, runs: pd.DataFrame) -> pd.DataFrame:
    """``diag/criticality_hist.csv`` of each run in ``runs`` (``run_id, artifact_uri``), stacked:
    ``run_id, bin_left, bin_right, count``. Runs without it are left out."""
    requests = {
        row.run_id: artifact_uri(row.artifact_uri, CRITICALITY_HISTOGRAM) for row in runs.itertuples(index=False)
    }
    columns = ["bin_left", "bin_right", "count"]
    frames = [
        frame.loc[:, columns].assign(run_id=run_id)
        for run_id, frame in load_csv_artifacts(tracking_uri, requests).items()
        if frame is not None and set(columns) <= set(frame.columns)
    ]
    if not frames:
        return pd.DataFrame(columns=["run_id", *columns])
    return pd.concat(frames, ignore_index=True).loc[:, ["run_id", *columns]]
