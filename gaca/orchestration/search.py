"""``gaca search gate [--trials N] [--workers K] [overrides]``: Optuna over the gate's parameters.

Optuna (5.x) is driven directly with ask/tell (the Hydra Optuna sweeper pins optuna<3, whose
storage fails here: FACTS.md). A trial trains GACA once per seed, each seed a job through the same
launcher as ``gaca sweep`` (local or SLURM), at most ``workers`` trials at once. The objective is
the mean over seeds of ``final/eval_success_rate``.

Pruning: while a trial's jobs run, the driver reads their ``eval/success_rate`` from MLflow and
reports, at every evaluation iteration all seeds have reached, the seeds' mean to the median
pruner. A pruned trial's jobs are cancelled at once: its remaining iterations never run.

The study persists (SQLite by default, any Optuna storage URL). Rerunning the command continues
it up to ``--trials`` ended trials; trials left running by a driver that died are taken up again,
their runs resuming from their checkpoints (runs are found by ``gaca.run_key`` like any other).
Every run of a trial carries the tags ``gaca.study`` and ``gaca.trial``; the best parameters and
the optimisation history are written to ``reports/search/<study>/``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

from omegaconf import OmegaConf

from gaca.contract import EVAL_SUCCESS_RATE, TAG_STUDY, TAG_TRIAL, TAG_TRIAL_STATE
from gaca.orchestration.dispatch import Outcome
from gaca.orchestration.plan import FINAL_METRIC, PlannedRun
from gaca.tracking.secrets import redact_uri
from gaca.trainer.entry import CONF_DIR

SEARCH_DIR = CONF_DIR / "search"
EVAL_METRIC = EVAL_SUCCESS_RATE
BLOCK = "search"
"""The ``gaca.block`` tag of every search run."""
POLL_S = 1.0
SEARCH_PREFIX = "search."
"""Command-line overrides of the search config itself, e.g. ``search.seeds=[0,1]``."""
SET_BY_SEARCH = ("algorithm", "seed", "block")
"""Run overrides the search sets itself (with the keys of its space)."""


@dataclass(frozen=True)
class SearchConfig:
    """``conf/search/<name>.yaml`` with the command line's flags applied."""

    study: str
    storage: str
    trials: int
    workers: int
    seeds: tuple[int, ...]
    sampler_seed: int
    sampler_startup_trials: int
    pruner_startup_trials: int
    pruner_warmup_steps: int
    space: Mapping[str, tuple[float, float]]
    reports: Path

    @property
    def report_dir(self) -> Path:
        return self.reports / self.study


def load_search(
    name: str, overrides: list[str] = (), trials: int | None = None, workers: int | None = None,
    study: str | None = None, storage: str | None = None,
) -> SearchConfig:
    """The search config; ``overrides`` are ``search.KEY=VALUE`` (e.g. ``search.seeds=[0,1]``)."""
    path = SEARCH_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SEARCH_DIR.glob("*.yaml")))
        raise ValueError(f"unknown search {name!r}; known: {known} (conf/search/)")
    loaded = OmegaConf.load(path)
    OmegaConf.set_struct(loaded, True)  # an override of a key the file lacks is an error
    try:
        loaded.merge_with_dotlist([override[len(SEARCH_PREFIX) :] for override in overrides])
    except Exception as error:
        raise ValueError(f"search override: {error}") from None
    raw = OmegaConf.to_container(loaded, resolve=True)
    space = {}
    for key, bounds in raw["space"].items():
        if not (isinstance(bounds, list) and len(bounds) == 2 and bounds[0] < bounds[1]):
            raise ValueError(f"{path}: space.{key} must be [low, high] with low < high, got {bounds!r}")
        space[key] = (float(bounds[0]), float(bounds[1]))
    config = SearchConfig(
        study=study or raw["study"],
        storage=storage or raw["storage"] or f"sqlite:///{Path.cwd() / 'optuna.db'}",
        trials=raw["trials"] if trials is None else trials,
        workers=raw["workers"] if workers is None else workers,
        seeds=tuple(raw["seeds"]),
        sampler_seed=raw["sampler"]["seed"],
        sampler_startup_trials=raw["sampler"]["n_startup_trials"],
        pruner_startup_trials=raw["pruner"]["n_startup_trials"],
        pruner_warmup_steps=raw["pruner"]["n_warmup_steps"],
        space=space,
        reports=Path(raw["reports"]),
    )
    if config.trials < 1 or config.workers < 1 or not config.seeds:
        raise ValueError(
            "--trials and --workers must be >= 1 and seeds non-empty, "
            f"got {config.trials}, {config.workers}, {config.seeds}"
        )
    return config


def trial_overrides(params: Mapping[str, float], seed: int, run_overrides: list[str]) -> list[str]:
    """A trial's run for one seed: GACA with the sampled gate, tagged block=search."""
    gate = [f"{key}={value!r}" for key, value in params.items()]
    return [f"block={BLOCK}", "algorithm=gaca", *run_overrides, *gate, f"seed={seed}"]


def common_means(histories: list[Mapping[int, float]]) -> list[tuple[int, float]]:
    """(step, mean over seeds) at every evaluation step that every seed has reached."""
    if not histories:
        return []
    steps = sorted(set.intersection(*(set(history) for history in histories)))
    return [(step, sum(history[step] for history in histories) / len(histories)) for step in steps]


def report_progress(
    trial: Any, histories: list[Mapping[int, float]], reported: int, may_prune: bool = True
) -> tuple[int, bool]:
    """Report the steps after ``reported`` to Optuna; (last step reported, whether to prune now)."""
    for step, value in common_means(histories):
        if step > reported:
            trial.report(value, step)
            reported = step
            if may_prune and trial.should_prune():
                return reported, True
    return reported, False


@dataclass
class TrialInFlight:
    """One trial whose jobs run: its Optuna handle and, per seed, its planned run."""

    trial: Any
    runs: dict[int, PlannedRun]
    run_ids: dict[int, str] = field(default_factory=dict)
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    reported: int = -1

    @property
    def number(self) -> int:
        return self.trial.number

    def ended(self) -> bool:
        return len(self.outcomes) == len(self.runs)


def parse(argv: list[str]) -> argparse.Namespace:
    known = ", ".join(sorted(p.stem for p in SEARCH_DIR.glob("*.yaml")))
    parser = argparse.ArgumentParser(prog="gaca search", description="Optuna over the gate (conf/search/NAME.yaml).")
    parser.add_argument("name", help=f"the search config: {known}")
    parser.add_argument(
        "overrides", nargs="*",
        help="run overrides for every trial (e.g. env=shop), launcher=slurm, hydra.launcher.*, search.KEY=VALUE",
    )
    parser.add_argument("--trials", type=int, help="trials the study should have ended with (a rerun continues)")
    parser.add_argument("--workers", type=int, help="trials in flight at once")
    parser.add_argument("--study", help="study name (default: the config's)")
    parser.add_argument("--storage", help="Optuna storage URL (default: sqlite:///optuna.db here)")
    return parser.parse_intermixed_args(argv)


def main(argv: list[str]) -> int:
    from gaca.orchestration.plan import InvalidRuns
    from gaca.orchestration.session import HydraSession, split_overrides

    args = parse(argv)
    try:
        own = [o for o in args.overrides if o.startswith(SEARCH_PREFIX)]
        search = load_search(args.name, own, args.trials, args.workers, args.study, args.storage)
        launcher, hydra_overrides, run_overrides = split_overrides([o for o in args.overrides if o not in own])
        clashes = [o for o in run_overrides if o.split("=", 1)[0].lstrip("+~") in (*SET_BY_SEARCH, *search.space)]
        if clashes:
            raise ValueError(f"{clashes} are set by the search itself")
        folder = Path("multirun", f"search-{search.study}", datetime.now().strftime("%Y-%m-%d_%H-%M-%S")).resolve()
        session = HydraSession(launcher, hydra_overrides, [], folder, job_name=f"gaca-search-{search.study}")
        corners = check_space(search, run_overrides, session)
    except (ValueError, InvalidRuns) as error:
        print(f"gaca search: {error}", file=sys.stderr)
        return 2
    return Search(search, session, run_overrides, corners[0]).run()


def check_space(search: SearchConfig, run_overrides: list[str], session: Any) -> list[PlannedRun]:
    """Compose and validate a trial's runs at both corners of the space before the study starts."""
    from gaca.orchestration.plan import plan

    items = []
    for corner in (0, 1):
        params = {key: bounds[corner] for key, bounds in search.space.items()}
        items += [(BLOCK, [], trial_overrides(params, seed, run_overrides)) for seed in search.seeds]
    return plan(items, session.compose)


class Search:
    """The ask/tell loop: keep ``workers`` trials in flight, feed the pruner, tell results."""

    def __init__(self, search: SearchConfig, session: Any, run_overrides: list[str], sample_run: PlannedRun) -> None:
        import optuna
        from mlflow.tracking import MlflowClient

        from gaca.orchestration.dispatch import JobPool
        from gaca.orchestration.job import run as run_job
        from gaca.orchestration.plan import tracking_of
        from gaca.tracking.store import prepare_store

        self.search = search
        self.session = session
        self.run_overrides = run_overrides
        self.uri, experiment = tracking_of([sample_run])
        self.experiment_id = prepare_store(self.uri, experiment)
        self.client = MlflowClient(tracking_uri=self.uri)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(
            study_name=search.study,
            storage=search.storage,
            load_if_exists=True,
            direction="maximize",
            sampler=optuna.samplers.TPESampler(
                seed=search.sampler_seed, n_startup_trials=search.sampler_startup_trials
            ),
            pruner=optuna.pruners.MedianPruner(
                n_startup_trials=search.pruner_startup_trials, n_warmup_steps=search.pruner_warmup_steps
            ),
        )
        self.pool = JobPool(session.launcher(run_job), session.parallel_jobs)
        self.active: dict[int, TrialInFlight] = {}
        self.began = time.monotonic()

    def run(self) -> int:
        from optuna.trial import Trial, TrialState

        print(
            f"study {self.search.study!r} in {self.search.storage}: "
            f"{self.ended_count()} trials ended, target {self.search.trials}"
        )
        print(f"MLflow {redact_uri(self.uri)}; job logs under {self.session.sweep_dir}")
        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            print(f"taking up trial {frozen.number}, left running by an earlier driver")
            # Optuna has no public handle from a trial number; FrozenTrial._trial_id is its storage id.
            self.start(Trial(self.study, frozen._trial_id), reported=max(frozen.intermediate_values, default=-1))
        try:
            while True:
                while self.room_for_a_trial():
                    self.start(self.study.ask())
                if not self.active:
                    break
                self.step()
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            self.pool.cancel_all()
            print("\ninterrupted: jobs cancelled; rerun the same command to continue the study", file=sys.stderr)
            self.write_reports()
            return 130
        self.write_reports(plot=True)
        return 0

    def room_for_a_trial(self) -> bool:
        in_flight = len(self.active)
        return in_flight < self.search.workers and self.ended_count() + in_flight < self.search.trials

    def ended_count(self) -> int:
        from optuna.trial import TrialState

        ended = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
        return len(self.study.get_trials(deepcopy=False, states=ended))

    def start(self, trial: Any, reported: int = -1) -> None:
        """Launch a trial's runs (one job per seed); ``reported``: the last step Optuna already has."""
        from optuna.trial import TrialState

        from gaca.orchestration.plan import InvalidRuns, plan

        params = {key: trial.suggest_float(key, low, high) for key, (low, high) in self.search.space.items()}
        shown = " ".join(f"{key.split('.')[-1]}={value:.3f}" for key, value in params.items())
        items = [(BLOCK, [], trial_overrides(params, seed, self.run_overrides)) for seed in self.search.seeds]
        try:
            runs = dict(zip(self.search.seeds, plan(items, self.session.compose)))
        except InvalidRuns as error:  # the corners were valid, so a validator is not convex in the space
            self.study.tell(trial, state=TrialState.FAIL)
            print(f"[{self.clock()}] trial {trial.number} failed before launch ({shown}):\n{error}")
            return
        self.active[trial.number] = TrialInFlight(trial, runs, reported=reported)
        first_job = trial.number * len(self.search.seeds)  # Hydra's job number: one job folder per run
        self.pool.add([
            ((trial.number, seed), first_job + position, self.session.job_overrides(run.overrides))
            for position, (seed, run) in enumerate(runs.items())
        ])
        print(f"[{self.clock()}] trial {trial.number} started: {shown}")

    def step(self) -> None:
        for (number, seed), outcome in self.pool.poll():
            if number in self.active:
                self.active[number].outcomes[seed] = outcome
        for flight in list(self.active.values()):
            ended = flight.ended()  # a trial whose runs all ended is told, not pruned
            flight.reported, prune = report_progress(flight.trial, self.histories(flight), flight.reported, not ended)
            if prune:
                self.prune(flight)
            elif ended:
                self.finish(flight)

    def histories(self, flight: TrialInFlight) -> list[dict[int, float]]:
        """Each seed's evaluation curve so far, read from MLflow (tagging the run once found)."""
        from gaca.tracking.run import find_run

        curves = []
        for seed, run in flight.runs.items():
            if seed not in flight.run_ids:
                found = find_run(self.client, self.experiment_id, run.key)
                if found is None:
                    curves.append({})
                    continue
                flight.run_ids[seed] = found.run_id
                self.tag(flight, seed, {})
            points = self.client.get_metric_history(flight.run_ids[seed], EVAL_METRIC)
            curves.append({point.step: point.value for point in points})
        return curves

    def tag(self, flight: TrialInFlight, seed: int, extra: Mapping[str, str]) -> None:
        tags = {TAG_STUDY: self.search.study, TAG_TRIAL: str(flight.number), **extra}
        for key, value in tags.items():
            self.client.set_tag(flight.run_ids[seed], key, value)

    def prune(self, flight: TrialInFlight) -> None:
        from optuna.trial import TrialState

        for seed in flight.runs:
            if seed not in flight.outcomes:
                self.pool.discard((flight.number, seed))
        self.study.tell(flight.trial, state=TrialState.PRUNED)
        self.close(flight, "pruned", f"pruned at iteration {flight.reported}; its remaining jobs cancelled")

    def finish(self, flight: TrialInFlight) -> None:
        from optuna.trial import TrialState

        failed = {seed: o for seed, o in flight.outcomes.items() if not o.ok}
        finals = [self.final_success(flight, seed) for seed in flight.runs] if not failed else []
        if failed or any(value is None for value in finals):
            self.study.tell(flight.trial, state=TrialState.FAIL)
            reasons = "; ".join(f"seed {s}: {o.error.strip().splitlines()[-1]} ({o.log})" for s, o in failed.items())
            self.close(flight, "failed", f"failed: {reasons or 'a run logged no final metric'}")
            return
        value = sum(finals) / len(finals)
        self.study.tell(flight.trial, value)
        self.close(flight, "complete", f"mean final eval success {value:.3f} over seeds {list(flight.runs)}")

    def final_success(self, flight: TrialInFlight, seed: int) -> float | None:
        run_id = flight.run_ids.get(seed)
        if run_id is None:
            self.histories(flight)
            run_id = flight.run_ids.get(seed)
        metric = self.client.get_run(run_id).data.metrics.get(FINAL_METRIC) if run_id else None
        return None if metric is None or math.isnan(metric) else float(metric)

    def close(self, flight: TrialInFlight, state: str, text: str) -> None:
        for seed in flight.run_ids:
            self.tag(flight, seed, {TAG_TRIAL_STATE: state})
        del self.active[flight.number]
        print(f"[{self.clock()}] trial {flight.number} {text}")
        self.write_reports()

    def clock(self) -> str:
        from gaca.orchestration.display import clock

        return clock(time.monotonic() - self.began)

    def write_reports(self, plot: bool = False) -> None:
        """``best.yaml`` (the best trial's overrides) and ``history.csv`` (every trial); the plot at the end."""
        from optuna.trial import TrialState

        folder = self.search.report_dir
        folder.mkdir(parents=True, exist_ok=True)
        trials = self.study.get_trials(deepcopy=False)
        keys = list(self.search.space)
        with open(folder / "history.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["trial", "state", "value", *keys, "last_step", "started", "ended"])
            for t in trials:
                last = max(t.intermediate_values, default="")
                value = "" if t.value is None else t.value
                params = [t.params.get(key, "") for key in keys]
                times = [t.datetime_start or "", t.datetime_complete or ""]
                writer.writerow([t.number, t.state.name, value, *params, last, *times])
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        if complete:
            best = self.study.best_trial
            summary = {
                "study": self.search.study,
                "storage": self.search.storage,
                "best_trial": best.number,
                "mean_final_eval_success": best.value,
                "seeds": list(self.search.seeds),
                "params": dict(best.params),
                "overrides": " ".join(f"{k}={v!r}" for k, v in best.params.items()),
                "trials": {state.name.lower(): sum(t.state == state for t in trials) for state in TrialState},
            }
            (folder / "best.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(summary)))
        if plot and complete:
            import matplotlib

            matplotlib.use("Agg")
            from optuna.visualization.matplotlib import plot_optimization_history

            axes = plot_optimization_history(self.study)
            axes.figure.savefig(folder / "history.png", dpi=120, bbox_inches="tight")
