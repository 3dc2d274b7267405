"""A sweep's plan: every run composed and validated, keyed by its identity, deduplicated, and
matched with what MLflow already holds, before anything is launched."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

from gaca.compose.blocks import Block, expand
from gaca.contract import FINAL_EVAL_SUCCESS_RATE, TAG_RUN_KEY
from gaca.orchestration.job import is_training

# A run's state, from MLflow (and from its lock for an unfinished one).
DONE = "done"  # FINISHED: skipped
TO_RUN = "to run"  # not in MLflow
FAILED_BEFORE = "failed before"  # FAILED or KILLED: resumed from its last checkpoint
INTERRUPTED = "interrupted"  # RUNNING in MLflow but no job trains it (its job died): resumed
RUNNING = "running"  # a live job holds its lock: left alone
LAUNCHED = (TO_RUN, FAILED_BEFORE, INTERRUPTED)
"""The states whose runs a sweep launches."""
FINAL_METRIC = FINAL_EVAL_SUCCESS_RATE
SHOWN_ERRORS = 10
"""Invalid runs listed by name; usually they all fail for one reason."""


@dataclass
class PlannedRun:
    index: int
    """Position in the plan (Hydra's job number)."""
    block: str
    """The block it is launched under: the first that holds it."""
    grid: list[str]
    """The overrides that make it this run: its grid point and the command line's run overrides."""
    overrides: list[str]
    """What its job composes (the block file, its grid point, the command line, tracking and output)."""
    key: str
    config: Any
    """The validated ``RunConfig``."""
    also_in: list[str] = field(default_factory=list)
    """Other blocks holding the same run (``gaca sweep all`` launches it once)."""
    state: str = TO_RUN
    run_id: str | None = None
    label: str = ""
    """What tells it apart from the plan's other runs: its grid point without the shared overrides."""
    resolved: dict[str, Any] = field(default_factory=dict, repr=False)
    """The composed config as a plain nested dict (what ``run_key`` hashes)."""
    extends: int | None = None
    """To run from the end of a finished run of this many iterations (``gaca.backends.cpu.extension``)."""

    @property
    def checkpoint_dir(self) -> Path:
        return Path(self.config.output_dir) / self.key


class InvalidRuns(ValueError):
    """Some runs' configs failed validation; ``errors`` pairs each run's overrides with the message."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        shown = [f"  {label}: {message}" for label, message in errors[:SHOWN_ERRORS]]
        if len(errors) > SHOWN_ERRORS:
            shown.append(f"  ... and {len(errors) - SHOWN_ERRORS} more")
        super().__init__("\n".join(shown))


def plan_runs(
    blocks: list[Block], overrides: list[str], compose: Callable[[list[str]], DictConfig]
) -> list[PlannedRun]:
    """Compose and validate every run of ``blocks``; each distinct run (by ``gaca.run_key``) once.

    Raises ``InvalidRuns`` naming every invalid run; then nothing may be launched.
    """
    items = [(block.name, block.base_overrides(), grid) for block in blocks for grid in expand(block, overrides)]
    return plan(items, compose)


def plan(items: list[tuple[str, list[str], list[str]]], compose: Callable[[list[str]], DictConfig]) -> list[PlannedRun]:
    """Runs from (block, base overrides, grid overrides) items: composed, validated, deduplicated.

    Tracking URI and output folder are resolved here, once, and passed to every job explicitly,
    so that jobs started anywhere (another folder, another node) log and checkpoint in one place.
    """
    from gaca.compose import ConfigError, validate
    from gaca.tracking.identity import run_key
    from gaca.tracking.secrets import redact_uri

    runs: list[PlannedRun] = []
    by_key: dict[str, PlannedRun] = {}
    errors: list[tuple[str, str]] = []
    composed: dict[tuple[str, ...], DictConfig] = {}
    for block, base, grid in items:
        label = " ".join(grid) or "(defaults)"
        try:
            config, resolved = validate(compose_seeded(compose, [*base, *grid], composed))
        except Exception as error:  # ConfigError, or Hydra's (an unknown key, a bad override)
            message = str(error) if isinstance(error, ConfigError) else f"{type(error).__name__}: {error}"
            errors.append((f"{block}: {label}", message))
            continue
        key = run_key(resolved)
        if key in by_key:
            if block != by_key[key].block and block not in by_key[key].also_in:
                by_key[key].also_in.append(block)
            continue
        # A URI's password never travels in a job's overrides: jobs get it through MLflow's variables.
        job_overrides = [redact_uri(override) for override in (*base, *grid)] + placement_overrides(config)
        planned = PlannedRun(len(runs), block, grid, job_overrides, key, config, resolved=resolved)
        by_key[key] = planned
        runs.append(planned)
    if errors:
        raise InvalidRuns(errors)
    shared = set(shared_overrides(runs))
    for run in runs:
        run.label = " ".join(o for o in run.grid if o not in shared) or "(defaults)"
    return runs


SEED_KEY = "seed"


def compose_seeded(
    compose: Callable[[list[str]], DictConfig], overrides: list[str], cache: dict[tuple[str, ...], DictConfig]
) -> DictConfig:
    """``compose(overrides)``, composing once per set of overrides that differ only in the seed: the
    seed is a top-level value that nothing in conf/ reads while composing (no defaults entry, no
    interpolation), so a copy of the composed config with the seed set is what Hydra composes for it
    (tests/orchestration/test_plan.py checks run keys against composing every run). A plan of 10
    seeds then composes a tenth of its runs."""
    seeds = [o for o in overrides if o.split("=", 1)[0] == SEED_KEY]
    value = seeds[0].split("=", 1)[1] if len(seeds) == 1 else ""
    if not value.isdigit():
        return compose(overrides)
    rest = tuple(o for o in overrides if o != seeds[0])
    if rest not in cache:
        cache[rest] = compose(overrides)
    config = copy.deepcopy(cache[rest])
    with open_dict(config):
        config[SEED_KEY] = int(value)
    return config


def shared_overrides(runs: list[PlannedRun]) -> list[str]:
    """The grid overrides every run of a plan has (the command line's, mostly), in order."""
    if len(runs) < 2:
        return []
    common = set.intersection(*(set(run.grid) for run in runs))
    return [override for override in runs[0].grid if override in common]


def placement_overrides(config: Any) -> list[str]:
    """Absolute tracking URI (its password masked) and output folder (neither is part of a run's identity)."""
    from gaca.text import quoted
    from gaca.tracking.secrets import redact_uri
    from gaca.tracking.store import configured_tracking_uri

    return [
        f"tracking.uri={quoted(redact_uri(configured_tracking_uri(config.tracking.uri)))}",
        f"output_dir={quoted(str(Path(config.output_dir).resolve()))}",
    ]


def tracking_of(runs: list[PlannedRun]) -> tuple[str, str]:
    """The (tracking URI, experiment) that all ``runs`` share."""
    from gaca.tracking.store import resolve_tracking_uri

    places = {(resolve_tracking_uri(r.config.tracking.uri), r.config.tracking.experiment) for r in runs}
    if len(places) != 1:
        raise ValueError(f"the runs of one sweep must log to one MLflow experiment, got {sorted(places)}")
    return places.pop()


@dataclass(frozen=True)
class RecordedRun:
    run_id: str
    status: str
    """MLflow's: FINISHED, RUNNING, FAILED, KILLED."""
    tags: Mapping[str, str]
    final_success: float | None
    """``final/eval_success_rate`` when logged."""


def recorded_runs(uri: str, experiment: str) -> dict[str, RecordedRun]:
    """Run key -> the run MLflow holds for it (a FINISHED one wins over others, as ``find_run``).

    One paged query for the whole experiment: MLflow's search has no IN over tags. An absent
    store or experiment reads as empty and is not created.
    """
    from mlflow.tracking import MlflowClient

    from gaca.tracking.store import store_exists

    if not store_exists(uri):
        return {}

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return {}
    recorded: dict[str, RecordedRun] = {}
    page_token = None
    while True:
        page = client.search_runs(
            [found.experiment_id], max_results=1000, order_by=["attributes.start_time DESC"], page_token=page_token
        )
        for run in page:
            key = run.data.tags.get(TAG_RUN_KEY)
            if key is None:
                continue
            seen = recorded.get(key)
            if seen is None or (seen.status != "FINISHED" and run.info.status == "FINISHED"):
                final = run.data.metrics.get(FINAL_METRIC)
                recorded[key] = RecordedRun(run.info.run_id, run.info.status, dict(run.data.tags), final)
        page_token = page.token
        if not page_token:
            return recorded


def attach_states(runs: Iterable[PlannedRun], recorded: Mapping[str, RecordedRun]) -> None:
    """Set each run's state from MLflow and, unless finished, from its job lock (a job may hold it
    before its MLflow run exists, or after a preemption marked the run FAILED)."""
    for run in runs:
        record = recorded.get(run.key)
        run.run_id = record.run_id if record else None
        if record is not None and record.status == "FINISHED":
            run.state = DONE
        elif is_training(run.checkpoint_dir):
            run.state = RUNNING
        elif record is None:
            run.state = TO_RUN
        elif record.status == "RUNNING":
            run.state = INTERRUPTED
        else:
            run.state = FAILED_BEFORE


def attach_extensions(runs: Iterable[PlannedRun], recorded: Mapping[str, RecordedRun]) -> None:
    """For each run to start, the longest finished shorter run of its configuration that it will extend:
    finished in MLflow, its checkpoints still in the run's ``output_dir``."""
    from gaca.backends.cpu.extension import extensible, longest

    finished = [(key, record.run_id) for key, record in recorded.items() if record.status == "FINISHED"]
    for run in runs:
        source = None
        if run.state == TO_RUN and extensible(run.config):
            source = longest(run.resolved, finished, Path(run.config.output_dir))
        run.extends = None if source is None else source.iterations


@dataclass(frozen=True)
class Estimate:
    unit: str
    """"GPU hours" when any run trains on GPUs (backend=verl) or has a GPU estimate (the paper preset), else
    "CPU minutes"."""
    amounts: tuple[float, ...]
    """Each run's estimate, in plan order."""

    @property
    def runs(self) -> int:
        return len(self.amounts)

    @property
    def amount(self) -> float:
        return sum(self.amounts)

    def __str__(self) -> str:
        return f"{self.runs} runs, about {self.amount:.1f} {self.unit} ({self.amount / max(self.runs, 1):.2f} per run)"


def estimate(runs: list[PlannedRun]) -> Estimate:
    """The compute of ``runs`` from the per-run estimates of their trainer presets."""
    from gaca.backends.backend_config import spec as backend_spec

    gpu = tuple(r.config.trainer.estimated_gpu_hours for r in runs)
    if any(hours > 0 for hours in gpu) or any(backend_spec(r.config.backend.name).on_gpus for r in runs):
        return Estimate("GPU hours", gpu)
    return Estimate("CPU minutes", tuple(r.config.trainer.estimated_cpu_minutes * share(r) for r in runs))


def share(run: PlannedRun) -> float:
    """The part of a run's iterations it trains: all, or those after the run it extends."""
    iterations = run.config.trainer.iterations
    return 1.0 if run.extends is None else (iterations - run.extends) / iterations
