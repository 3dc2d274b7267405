"""Extending a finished run to more iterations instead of training the longer run from iteration 0.

Every draw of iteration i comes from a generator seeded by (seed, i, purpose) (``seeds``), and with a
constant learning rate nothing before iteration m depends on how many iterations follow: a run of N
iterations passes through exactly the state that a finished run of m < N iterations of the same
configuration saved at its end. So a new run whose configuration differs from a finished one only in
``trainer.iterations`` starts from that run's last checkpoint, with the finished run's curves up to
there copied into its own MLflow run, and trains iterations m+1..N: the same numbers as a run from
iteration 0 (a test holds them equal), for (N - m) / N of its cost. The new run is a run of its own
(its own key, checkpoints and MLflow run, tagged ``gaca.extended_from``); the source is left as it was.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gaca import contract
from gaca.backends.config import RunConfig
from gaca.tracking.identity import run_key
from gaca.tracking.run import RunLogger, patiently

if TYPE_CHECKING:
    from gaca.backends.cpu.checkpoint import Checkpoint


@dataclass(frozen=True)
class Source:
    run_id: str
    key: str
    iterations: int
    """The finished run's ``trainer.iterations`` (its last checkpoint is at most this)."""


def extensible(run: RunConfig) -> bool:
    """Whether iterations 1..m of ``run`` are those of the same configuration with m iterations:
    the CPU trainer with a constant learning rate (a linear schedule anneals toward the last iteration)."""
    return run.extend and run.backend.name == "cpu" and run.trainer.lr_schedule == "constant"


def shorter_keys(resolved: dict[str, Any]) -> dict[str, int]:
    """Run key -> iterations, of ``resolved`` with each ``trainer.iterations`` below its own."""
    keys: dict[str, int] = {}
    for m in range(1, int(resolved["trainer"]["iterations"])):
        keys[run_key({**resolved, "trainer": {**resolved["trainer"], "iterations": m}})] = m
    return keys


def longest(resolved: dict[str, Any], finished: Iterable[tuple[str, str]], output: Path) -> Source | None:
    """Among ``finished`` runs (run key, run id), the one with the most iterations below ``resolved``'s
    whose configuration is ``resolved`` with only ``trainer.iterations`` changed and whose checkpoints
    are under ``output``; None when there is none. The one rule the trainer and a sweep's plan share."""
    candidates = shorter_keys(resolved)
    sources = [
        Source(run_id, key, candidates[key])
        for key, run_id in finished
        if key in candidates and (output / key).is_dir()
    ]
    return max(sources, key=lambda source: source.iterations, default=None)


def find_source(logger: RunLogger, resolved: dict[str, Any], output: Path) -> Source | None:
    """``longest`` over the finished runs of the logger's experiment."""
    client, uri = logger.client, logger.uri
    experiment_id = patiently(lambda: client.get_run(logger.run_id).info.experiment_id, uri, "reading the run")
    # MLflow's filter has no IN for tags: narrow by the seed's and method's tags, match keys in ``longest``.
    narrow = (
        f"tags.`{contract.TAG_SEED}` = '{resolved['seed']}' and "
        f"tags.`{contract.TAG_METHOD}` = '{resolved['algorithm']['method']}' and attributes.status = 'FINISHED'"
    )
    finished: list[tuple[str, str]] = []
    token: str | None = None
    while True:

        def search(token: str | None = token) -> Any:
            return client.search_runs([experiment_id], filter_string=narrow, page_token=token)

        page = patiently(search, uri, "looking for a shorter run to extend")
        finished += [(r.data.tags.get(contract.TAG_RUN_KEY, ""), r.info.run_id) for r in page]
        token = page.token
        if not token:
            return longest(resolved, finished, output)


def adopt(source: Source, logger: RunLogger, output: Path, checkpoint_dir: Path, eval_every: int) -> Checkpoint | None:
    """Make ``source``'s last intact checkpoint the new run's first one and copy the source's metrics and
    evaluation artifacts up to it; returns that checkpoint as the new run's, or None (nothing done) when
    the source has no intact checkpoint under ``output``.

    What the longer run would not have logged is left out: the ``final/`` metrics, and the evaluation
    the source made at its last iteration when that is not one of ``eval_every``'s.
    """
    from gaca.backends.cpu.checkpoint import load_checkpoint, save_checkpoint

    checkpoint = load_checkpoint(output / source.key)
    if checkpoint is None or checkpoint.iteration < 1:
        return None
    until = checkpoint.iteration
    client = logger.client
    uri = logger.uri

    def copied(key: str, step: int) -> bool:
        if key.startswith("final/") or step > until:
            return False
        return not (step == until and until % eval_every and key in contract.EVAL_METRICS)

    record = patiently(lambda: client.get_run(source.run_id), uri, "reading the run to extend")
    points: dict[int, dict[str, float]] = {}
    for key in record.data.metrics:

        def history(key: str = key) -> list[Any]:
            return list(client.get_metric_history(source.run_id, key))

        for point in patiently(history, uri, "reading metrics"):
            if copied(key, point.step):
                points.setdefault(point.step, {})[key] = point.value
    for step in sorted(points):
        logger.log_metrics(points[step], step=step)
    for step in sorted(step for step, metrics in points.items() if contract.EVAL_SUCCESS_RATE in metrics):
        for artifact in (contract.outcomes_artifact(step), contract.transcripts_artifact(step)):
            text = _artifact_text(client, source.run_id, artifact)
            if text is not None:
                logger.log_text(text, artifact)
    logger.logged_until = max(logger.logged_until, until)  # steps a killed extension logged past it stay
    state = {**checkpoint.state, "run_id": logger.run_id}
    folder = save_checkpoint(checkpoint_dir, until, checkpoint.policy, state).resolve()
    print(
        f"gaca train: extending run {source.key} ({source.run_id}, {source.iterations} iterations) from its "
        f"checkpoint at iteration {until}",
        file=sys.stderr,
    )
    patiently(
        lambda: client.set_tag(logger.run_id, contract.TAG_EXTENDED_FROM, f"{source.run_id}@{until}"),
        uri,
        "tagging the run",
    )
    return dataclasses.replace(checkpoint, state=state, folder=folder)


def _artifact_text(client: Any, run_id: str, path: str) -> str | None:
    folder, _, name = path.rpartition("/")
    if name not in {Path(a.path).name for a in client.list_artifacts(run_id, folder)}:
        return None
    return Path(client.download_artifacts(run_id, path)).read_text()
