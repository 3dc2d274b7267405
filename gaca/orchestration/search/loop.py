"""The ask/tell loop: keep ``workers`` trials in flight, feed the pruner their progress, tell results."""

from __future__ import annotations

import sys
import time
from typing import Any, cast

from gaca.contract import TAG_TRIAL_STATE
from gaca.orchestration.plan import PlannedRun
from gaca.orchestration.search.config import BLOCK, SearchConfig, trial_overrides
from gaca.orchestration.search.progress import RunReader, TrialInFlight, report_progress
from gaca.orchestration.search.reports import write_reports
from gaca.tracking.secrets import redact_uri

POLL_S = 1.0


class Search:
    """The ask/tell loop: keep ``workers`` trials in flight, feed the pruner, tell results."""

    def __init__(self, search: SearchConfig, session: Any, run_overrides: list[str], sample_run: PlannedRun) -> None:
        import optuna
        from mlflow.tracking import MlflowClient

        from gaca.orchestration.dispatch import JobPool
        from gaca.orchestration.job import run as run_job
        from gaca.orchestration.plan import tracking_of
        from gaca.orchestration.store_writes import prepare_for_writes

        self.search = search
        self.session = session
        self.run_overrides = run_overrides
        self.uri, self.experiment = tracking_of([sample_run])
        self.experiment_id = prepare_for_writes(self.uri, self.experiment, f"search-{search.study}")
        self.reader = RunReader(MlflowClient(tracking_uri=self.uri), self.experiment_id, search.study)
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
            write_reports(self.search, self.study)
            return 130
        return self.confirm()

    def confirm(self) -> int:
        """The finalists on fresh seeds against the default gate, into best.yaml."""
        from gaca.orchestration.search.confirm import confirm, fresh_seeds

        try:
            confirmed = confirm(self.search, self.study, self.session, self.run_overrides, self.uri, self.experiment)
        except KeyboardInterrupt:
            print("\ninterrupted during confirmation; rerun the same command to finish it", file=sys.stderr)
            write_reports(self.search, self.study)
            return 130
        except RuntimeError as error:
            print(f"gaca search: confirmation: {error}", file=sys.stderr)
            write_reports(self.search, self.study, plot=True)
            return 1
        for finalist in confirmed:
            print(f"[{self.clock()}] confirmed {finalist.line()}")
        write_reports(self.search, self.study, plot=True, confirmed=confirmed, fresh=fresh_seeds(self.search))
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
        items: list[tuple[str, list[str], list[str]]] = [
            (BLOCK, [], trial_overrides(params, seed, self.run_overrides)) for seed in self.search.seeds
        ]
        try:
            runs = dict(zip(self.search.seeds, plan(items, self.session.compose)))
        except InvalidRuns as error:  # the corners were valid, so a validator is not convex in the space
            self.study.tell(trial, state=TrialState.FAIL)
            print(f"[{self.clock()}] trial {trial.number} failed before launch ({shown}):\n{error}")
            return
        self.active[trial.number] = TrialInFlight(trial, runs, reported=reported)
        first_job = trial.number * len(self.search.seeds)  # Hydra's job number: one job folder per run
        self.pool.add(
            [
                ((trial.number, seed), first_job + position, self.session.job_overrides(run.overrides))
                for position, (seed, run) in enumerate(runs.items())
            ]
        )
        print(f"[{self.clock()}] trial {trial.number} started: {shown}")

    def step(self) -> None:
        for key, outcome in self.pool.poll():
            number, seed = cast(tuple[int, int], key)  # the keys ``start`` gave the pool
            if number in self.active:
                self.active[number].outcomes[seed] = outcome
        for flight in list(self.active.values()):
            ended = flight.ended()  # a trial whose runs all ended is told, not pruned
            flight.reported, prune = report_progress(
                flight.trial, self.reader.histories(flight), flight.reported, not ended
            )
            if prune:
                self.prune(flight)
            elif ended:
                self.finish(flight)

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
        finals = [self.reader.final_success(flight, seed) for seed in flight.runs] if not failed else []
        if failed or any(value is None for value in finals):
            self.study.tell(flight.trial, state=TrialState.FAIL)
            reasons = "; ".join(f"seed {s}: {o.error.strip().splitlines()[-1]} ({o.log})" for s, o in failed.items())
            self.close(flight, "failed", f"failed: {reasons or 'a run logged no final metric'}")
            return
        value = sum(cast(list[float], finals)) / len(finals)  # none is None: checked above
        self.study.tell(flight.trial, value)
        self.close(flight, "complete", f"mean final eval success {value:.3f} over seeds {list(flight.runs)}")

    def close(self, flight: TrialInFlight, state: str, text: str) -> None:
        for seed in flight.run_ids:
            self.reader.tag(flight, seed, {TAG_TRIAL_STATE: state})
        del self.active[flight.number]
        print(f"[{self.clock()}] trial {flight.number} {text}")
        write_reports(self.search, self.study)

    def clock(self) -> str:
        from gaca.orchestration.display import clock

        return clock(time.monotonic() - self.began)
