"""What a trial's runs have logged so far, read from MLflow while their jobs run."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gaca.contract import EVAL_SUCCESS_RATE, FINAL_EVAL_SUCCESS_RATE, TAG_STUDY, TAG_TRIAL
from gaca.orchestration.dispatch import Outcome
from gaca.orchestration.plan import PlannedRun


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


def common_means(histories: Sequence[Mapping[int, float]]) -> list[tuple[int, float]]:
    """(step, mean over seeds) at every evaluation step that every seed has reached."""
    if not histories:
        return []
    steps = sorted(set.intersection(*(set(history) for history in histories)))
    return [(step, sum(history[step] for history in histories) / len(histories)) for step in steps]


def report_progress(
    trial: Any, histories: Sequence[Mapping[int, float]], reported: int, may_prune: bool = True
) -> tuple[int, bool]:
    """Report the steps after ``reported`` to Optuna; (last step reported, whether to prune now)."""
    for step, value in common_means(histories):
        if step > reported:
            trial.report(value, step)
            reported = step
            if may_prune and trial.should_prune():
                return reported, True
    return reported, False


class RunReader:
    """Finds a trial's runs in MLflow by run key, tags them with the study and trial, reads their curves."""

    def __init__(self, client: Any, experiment_id: str, study: str) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.study = study

    def histories(self, flight: TrialInFlight) -> list[dict[int, float]]:
        """Each seed's evaluation curve so far, read from MLflow (tagging the run once found)."""
        from gaca.tracking.run import find_run

        curves: list[dict[int, float]] = []
        for seed, run in flight.runs.items():
            if seed not in flight.run_ids:
                found = find_run(self.client, self.experiment_id, run.key)
                if found is None:
                    curves.append({})
                    continue
                flight.run_ids[seed] = found.run_id
                self.tag(flight, seed, {})
            points = self.client.get_metric_history(flight.run_ids[seed], EVAL_SUCCESS_RATE)
            curves.append({point.step: point.value for point in points})
        return curves

    def tag(self, flight: TrialInFlight, seed: int, extra: Mapping[str, str]) -> None:
        tags = {TAG_STUDY: self.study, TAG_TRIAL: str(flight.number), **extra}
        for key, value in tags.items():
            self.client.set_tag(flight.run_ids[seed], key, value)

    def final_success(self, flight: TrialInFlight, seed: int) -> float | None:
        run_id = flight.run_ids.get(seed)
        if run_id is None:
            self.histories(flight)
            run_id = flight.run_ids.get(seed)
        metric = self.client.get_run(run_id).data.metrics.get(FINAL_EVAL_SUCCESS_RATE) if run_id else None
        return None if metric is None or math.isnan(metric) else float(metric)
