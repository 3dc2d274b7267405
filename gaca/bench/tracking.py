"""Load on the tracking server: N runs logging at once, as a sweep's jobs do, into a real authenticated
``gaca mlflow`` server with an SQLite or a PostgreSQL store behind it.

Each writer is one run through ``gaca.tracking.run.RunLogger`` (the trainer's own path, retries
included): the run's params, then every ``--interval`` seconds one iteration's metrics (every
per-iteration name of ``gaca.contract.METRICS``: train/, loss/, diag/, perf/) in one batch; every
``--eval-every`` iterations the evaluation metrics and an ``eval/outcomes_NNNNN.csv`` of 128 tasks;
every ``--checkpoint-every`` iterations a file of ``--checkpoint-mb`` (a tiny-scale checkpoint's size);
at the end the final metric and FINISHED. Writers start spread over one interval, as jobs do.
``--restart server`` (or ``database``: the local PostgreSQL of ``scripts/local-postgres.sh``) restarts
it a third of the way in. Afterwards the store itself is read: every metric point a writer logged must
be there exactly once.

Run ``python -m gaca.bench.tracking --store sqlite postgresql --writers 8 32 64 --seconds 30``
(``gaca bench tracking``); PostgreSQL needs ``--postgres-url`` (or ``GACA_POSTGRES_URL``) of a role
that may create databases: each measurement gets a new database, dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from gaca.contract import EVAL_METRICS, FINAL_EVAL_SUCCESS_RATE, METRICS

ITERATION_PREFIXES = ("train/", "loss/", "diag/", "perf/")
"""What a training iteration logs every step (gaca.contract's names)."""
EXPERIMENT = "gaca"
EVAL_TASKS = 128
"""Rows of an evaluation's outcomes CSV (the household and errand families' held-out tasks)."""
WRITERS_PER_PROCESS = 8
"""Writer threads per client process (each process holds one HTTP session, as one job does)."""
SERVER_START_S = 240.0
ROOT = Path(__file__).resolve().parents[2]


def iteration_metrics() -> list[str]:
    return [name for name in METRICS if name.startswith(ITERATION_PREFIXES)]


@dataclass
class Server:
    """A ``gaca mlflow --auth`` process on 127.0.0.1 with its store; ``restart`` ends and starts it again."""

    folder: Path
    store: str
    port: int
    workers: int = 2
    process: subprocess.Popen | None = None
    log: list[Path] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        from gaca.tracking.postgres import PASSWORD_VARIABLE, split_password

        env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
        password = split_password(self.store)[1]
        if password is not None:
            env[PASSWORD_VARIABLE] = password  # never on a command line that `ps` shows
        return env

    def start(self) -> None:
        from gaca.tracking.postgres import split_password

        path = self.folder / f"server-{len(self.log)}.log"
        self.log.append(path)
        with path.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gaca.cli", "mlflow", "--auth", "--port", str(self.port)]
                + ["--workers", str(self.workers), "--store", split_password(self.store)[0]],
                cwd=self.folder,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + SERVER_START_S
        while not answers(self.uri):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the MLflow server did not start; its log: {path.read_text()[-2000:]}")
            time.sleep(0.5)

    def stop(self, crash: bool = False) -> None:
        """SIGTERM (MLflow's workers end their requests), or SIGKILL with ``crash`` (a lost node)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL if crash else signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def credentials(self) -> dict[str, str]:
        from gaca.tracking.auth import CREDENTIALS, FOLDER, read_credentials

        given = read_credentials(self.folder / FOLDER / CREDENTIALS)
        return {"MLFLOW_TRACKING_USERNAME": given.username, "MLFLOW_TRACKING_PASSWORD": given.password}


def answers(uri: str) -> bool:
    """Whether the MLflow server at ``uri`` answers ``/health`` with 200 (within 2 s)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_server(folder: Path, store: str, workers: int = 2) -> Iterator[Server]:
    """A real authenticated ``gaca mlflow`` on ``store``, serving from ``folder``, until the block ends."""
    server = Server(folder, store, free_port(), workers)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@dataclass
class Pace:
    """What one writer logs, and how often (iterations, as the CPU trainer logs them)."""

    seconds: float
    interval: float
    eval_every: int
    checkpoint_every: int
    checkpoint_mb: float


def outcomes_csv(iteration: int) -> str:
    rows = [f"{iteration},{task},0,{task % 2},{(task % 2) * 1.0:.1f},{10 + task % 7}" for task in range(EVAL_TASKS)]
    return "iteration,task_id,episode,success,return,length\n" + "\n".join(rows) + "\n"


def open_run(uri: str, index: int) -> tuple[object, float]:
    """The writer's run, created as the trainer creates one (params included); (logger, seconds it took)."""
    from gaca.tracking.run import RunLogger

    params = {f"bench.param_{i:03d}": str(i) for i in range(150)}  # a resolved config's size
    began = time.perf_counter()
    logger = RunLogger.open(uri, EXPERIMENT, f"bench-{index}-{os.getpid()}", f"bench-{index}", {}, params)
    return logger, time.perf_counter() - began


def write_run(logger, pace: Pace, start_at: float, blob: Path) -> dict:
    """One run's logging from ``start_at`` for ``pace.seconds``: what it logged, how long each call took,
    what failed after the retries."""
    from gaca.contract import outcomes_artifact

    time.sleep(max(0.0, start_at - time.time()))
    latencies: list[float] = []
    failures: list[str] = []
    logged: list[int] = []
    names = iteration_metrics()

    def timed(call, *args) -> bool:
        began = time.perf_counter()
        try:
            call(*args)
            return True
        except Exception as error:
            failures.append(f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}")
            return False
        finally:
            latencies.append(time.perf_counter() - began)

    deadline = start_at + pace.seconds
    step = 0
    while time.time() < deadline:
        step += 1
        values = {name: math.sin(step + i) for i, name in enumerate(names)}
        if step % pace.eval_every == 0:
            values.update({name: 0.5 for name in EVAL_METRICS})
        if timed(logger.log_metrics, values, step):
            logged.append(step)
        if step % pace.eval_every == 0:
            timed(logger.log_text, outcomes_csv(step), outcomes_artifact(step))
        if step % pace.checkpoint_every == 0:
            timed(logger.log_artifact, blob, f"checkpoints/iter-{step:05d}")
        time.sleep(max(0.0, start_at + step * pace.interval - time.time()))
    final = timed(logger.log_metrics, {FINAL_EVAL_SUCCESS_RATE: 0.5}, step)
    timed(logger.finish)
    return {
        "run_id": logger.run_id,
        "steps": logged,
        "final_step": step if final else None,
        "eval_steps": [s for s in logged if s % pace.eval_every == 0],
        "latencies": latencies,
        "failures": failures,
        "open_s": 0.0,
    }


def client_process(uri: str, indices: list[int], pace: Pace, folder: Path, out: Path) -> None:
    """The writers ``indices`` as threads of one process: their runs opened, ``<out>.ready`` written, then
    logging from the time the driver writes to ``folder/go``; their results as JSON in ``out``."""
    from concurrent.futures import ThreadPoolExecutor

    blob = folder / f"checkpoint-{os.getpid()}.bin"
    blob.write_bytes(os.urandom(int(pace.checkpoint_mb * 1e6)))

    def attempt(index: int) -> tuple[object, float] | str:
        try:
            return open_run(uri, index)
        except Exception as error:  # counted as a failed run, not a crashed benchmark
            return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}"

    with ThreadPoolExecutor(len(indices)) as pool:
        tried = list(pool.map(attempt, indices))
    opened = [result for result in tried if not isinstance(result, str)]
    failed = [{"run_id": None, "steps": [], "latencies": [], "failures": [r]} for r in tried if isinstance(r, str)]
    out.with_suffix(".ready").touch()
    go = folder / "go"
    while not go.exists() or not go.read_text():
        time.sleep(0.1)
    start_at = float(go.read_text())
    spread = [start_at + pace.interval * i / len(indices) for i in range(len(opened))]  # jobs are not in lockstep
    results = []
    if opened:
        with ThreadPoolExecutor(len(opened)) as pool:
            results = list(pool.map(lambda pair: write_run(pair[0][0], pace, pair[1], blob), zip(opened, spread)))
    for result, (_, seconds) in zip(results, opened):
        result["open_s"] = seconds
    out.write_text(json.dumps(results + failed))


def stored_points(store: str, run_ids: list[str]) -> dict[tuple[str, str, int], int]:
    """(run, metric, step) -> how many points of it the store holds, read from the database itself."""
    import sqlalchemy

    from gaca.tracking.postgres import is_postgres, split_password

    url = split_password(store)[0]
    if is_postgres(store) and url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    password = split_password(store)[1]
    engine = sqlalchemy.create_engine(url, connect_args={"password": password} if password else {})
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sqlalchemy.text(
                    "SELECT run_uuid, key, step, COUNT(*) FROM metrics WHERE run_uuid IN :ids "
                    "GROUP BY run_uuid, key, step"
                ).bindparams(sqlalchemy.bindparam("ids", expanding=True)),
                {"ids": run_ids},
            ).fetchall()
            statuses: dict[str, str] = dict(
                connection.execute(
                    sqlalchemy.text("SELECT run_uuid, status FROM runs WHERE run_uuid IN :ids").bindparams(
                        sqlalchemy.bindparam("ids", expanding=True)
                    ),
                    {"ids": run_ids},
                ).fetchall()
            )
    finally:
        engine.dispose()
    points = {(run, key, int(step)): int(count) for run, key, step, count in rows}
    points.update({("status", run, 0): 1 if status == "FINISHED" else 0 for run, status in statuses.items()})
    return points


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def restart_database() -> None:
    """Restart the local PostgreSQL of ``scripts/local-postgres.sh`` (the bench's ``--restart database``)."""
    script = ROOT / "scripts" / "local-postgres.sh"
    subprocess.run(["bash", str(script), "restart"], check=True, capture_output=True, text=True)


def measure(store_kind: str, writers: int, pace: Pace, folder: Path, postgres_url: str | None, restart: str | None):
    """One row of the table: ``writers`` runs for ``pace.seconds`` against a fresh store of ``store_kind``."""
    from gaca.tracking.postgres import scratch_database

    folder.mkdir(parents=True, exist_ok=True)
    if store_kind == "postgresql":
        if postgres_url is None:
            raise SystemExit("gaca bench tracking: --store postgresql needs --postgres-url or GACA_POSTGRES_URL")
        database = scratch_database(postgres_url, "gaca_bench")
    else:
        database = nullcontext(f"sqlite:///{folder / 'mlflow.db'}")  # type: ignore[assignment]
    with database as store, running_server(folder, store) as server:
        env = server.credentials()  # the writers get them in their environment, as a sweep's jobs do
        groups = [list(range(i, min(i + WRITERS_PER_PROCESS, writers))) for i in range(0, writers, WRITERS_PER_PROCESS)]
        processes: list[tuple[Path, subprocess.Popen]] = []
        try:
            for n, indices in enumerate(groups):
                out = folder / f"writers-{n}.json"
                command = [sys.executable, "-c", CLIENT, server.uri, json.dumps(indices), json.dumps(pace.__dict__)]
                processes.append((out, subprocess.Popen([*command, str(folder), str(out)], env={**os.environ, **env})))
            while not all(out.with_suffix(".ready").exists() for out, _ in processes):
                if any(process.poll() is not None for _, process in processes):
                    raise RuntimeError("a writer process ended before its runs were open")
                time.sleep(0.2)
            start_at = time.time() + 1.0
            (folder / "go").write_text(str(start_at))
            restarted = None
            if restart is not None:
                time.sleep(max(0.0, start_at + pace.seconds / 3 - time.time()))
                began = time.perf_counter()
                server.restart() if restart == "server" else restart_database()
                restarted = time.perf_counter() - began
            for _, process in processes:
                process.wait()
        finally:
            for _, process in processes:  # none is left waiting for a start that will not come
                if process.poll() is None:
                    process.kill()
                    process.wait()
        results = [result for out, _ in processes for result in json.loads(out.read_text())]
        points = stored_points(store, [r["run_id"] for r in results if r["run_id"]])
    return summarize(store_kind, writers, pace, results, points, restarted)


CLIENT = (
    "import json, sys; from pathlib import Path; from gaca.bench.tracking import Pace, client_process; "
    "a = sys.argv[1:]; client_process(a[0], json.loads(a[1]), Pace(**json.loads(a[2])), Path(a[3]), Path(a[4]))"
)


def summarize(store_kind, writers, pace, results, points, restarted) -> dict:
    names = iteration_metrics()
    expected = 0
    lost = 0
    for result in results:
        run = result["run_id"]
        if run is None:
            continue
        for step in result["steps"]:
            keys = names + (list(EVAL_METRICS) if step in result.get("eval_steps", []) else [])
            expected += len(keys)
            lost += sum(1 for key in keys if points.get((run, key, step), 0) == 0)
        if result.get("final_step") is not None:
            expected += 1
            lost += points.get((run, FINAL_EVAL_SUCCESS_RATE, result["final_step"]), 0) == 0
    attempted_steps = sum(len(r["steps"]) for r in results)
    duplicated = sum(count - 1 for key, count in points.items() if key[0] != "status" and count > 1)
    latencies = [value for r in results for value in r["latencies"]]
    opening = [r["open_s"] for r in results if r.get("open_s")]
    failures = [failure for r in results for failure in r["failures"]]
    finished = sum(count for key, count in points.items() if key[0] == "status")
    row = {
        "store": store_kind,
        "writers": writers,
        "seconds": pace.seconds,
        "requests": len(latencies),
        "failed after retries": len(failures),
        "p50 (ms)": 1000 * percentile(latencies, 50),
        "p99 (ms)": 1000 * percentile(latencies, 99),
        "iterations logged": attempted_steps,
        "metric points": expected,
        "lost": lost,
        "duplicated": duplicated,
        "runs finished": f"{finished}/{writers}",
        "run opened p50 (ms)": 1000 * percentile(opening, 50),
    }
    if restarted is not None:
        row["restart (s)"] = restarted
    if failures:
        row["first failure"] = failures[0][:120]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca bench tracking", description=__doc__.splitlines()[0])
    parser.add_argument("--store", nargs="+", default=["sqlite"], choices=["sqlite", "postgresql"])
    parser.add_argument("--writers", nargs="+", type=int, default=[8])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the writers log")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds per iteration of each run")
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--checkpoint-mb", type=float, default=1.0)
    parser.add_argument("--restart", choices=["server", "database"], help="restart it a third of the way in")
    parser.add_argument("--postgres-url", default=os.environ.get("GACA_POSTGRES_URL"))
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.restart == "database" and args.store != ["postgresql"]:
        parser.error("--restart database needs --store postgresql")
    pace = Pace(args.seconds, args.interval, args.eval_every, args.checkpoint_every, args.checkpoint_mb)
    folder = Path(tempfile.mkdtemp(prefix="gaca-bench-tracking-"))
    rows = []
    try:
        for kind in args.store:
            for writers in args.writers:
                rows.append(measure(kind, writers, pace, folder / f"{kind}-{writers}", args.postgres_url, args.restart))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    from gaca.text import table

    columns = list(dict.fromkeys(key for row in rows for key in row))
    shown = [
        [f"{row.get(c):.0f}" if isinstance(row.get(c), float) else row.get(c, "") for c in columns] for row in rows
    ]
    print(table(columns, shown))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(row["lost"] == 0 and row["duplicated"] == 0 for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
