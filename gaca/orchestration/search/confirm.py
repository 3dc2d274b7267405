"""The search's winners confirmed on fresh seeds.

The best trial's value is the maximum over many noisy means, so it is biased upward (the winner's
curse). After the study, the best ``confirm.trials`` complete trials (the best and the runner-up by
default) each train again on ``confirm.seeds`` fresh seeds, the ones after every seed the search
used, beside GACA's default gate on the same seeds. Per finalist: its mean on the fresh seeds, the
difference from the default paired by seed with its 95% t interval (``analysis.stats.basic``), and the
selection bias: the search's own mean minus the fresh mean. Runs are found by run key like any
other, so a rerun skips the finished ones.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from gaca.orchestration.search.config import BLOCK, SearchConfig, trial_overrides

POLL_S = 1.0


@dataclass(frozen=True)
class Confirmed:
    """One finalist on the fresh seeds."""

    trial: int
    params: Mapping[str, float]
    search_mean: float
    """The study's value: the mean over the search's seeds (selected as a maximum: biased upward)."""
    fresh: tuple[float, ...]
    default: tuple[float, ...]
    """GACA's default gate on the same fresh seeds."""

    @property
    def fresh_mean(self) -> float:
        return sum(self.fresh) / len(self.fresh)

    @property
    def difference(self) -> float:
        return self.fresh_mean - sum(self.default) / len(self.default)

    def interval(self) -> tuple[float, float]:
        """95% t interval of the paired difference over the fresh seeds (NaN with one seed)."""
        from analysis.stats import basic

        differences = [a - b for a, b in zip(self.fresh, self.default)]
        half = basic.half_width([basic.seed_level(differences)], len(differences))
        return self.difference - half, self.difference + half

    @property
    def selection_bias(self) -> float:
        return self.search_mean - self.fresh_mean

    def summary(self, seeds: Sequence[int]) -> dict[str, Any]:
        low, high = self.interval()
        return {
            "trial": self.trial,
            "params": dict(self.params),
            "search_mean": self.search_mean,
            "fresh_seeds": list(seeds),
            "fresh_mean": self.fresh_mean,
            "default_fresh_mean": sum(self.default) / len(self.default),
            "difference_vs_default": self.difference,
            "difference_interval_95": [low, high],
            "selection_bias": self.selection_bias,
        }

    def line(self) -> str:
        low, high = self.interval()
        return (
            f"trial {self.trial}: search mean {100 * self.search_mean:.1f}% (biased), fresh mean "
            f"{100 * self.fresh_mean:.1f}%; against the default gate {100 * self.difference:+.1f} pts "
            f"[{100 * low:+.1f}, {100 * high:+.1f}] (paired by seed, n={len(self.fresh)}); selection bias "
            f"{100 * self.selection_bias:+.1f} pts"
        )


def fresh_seeds(search: SearchConfig) -> tuple[int, ...]:
    """``confirm.seeds`` seeds after every seed the search used."""
    start = max(search.seeds) + 1
    return tuple(range(start, start + search.confirm_seeds))


def finalists(study: Any, count: int) -> list[Any]:
    """The ``count`` complete trials with the highest values, best first."""
    from optuna.trial import TrialState

    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE and t.value is not None]
    return sorted(complete, key=lambda t: (-t.value, t.number))[:count]


def confirm(
    search: SearchConfig, study: Any, session: Any, run_overrides: list[str], uri: str, experiment: str
) -> list[Confirmed]:
    """Train the finalists and the default gate on the fresh seeds (skipping finished runs) and
    pair them; [] when confirmation is off (``confirm.seeds: 0``) or no trial completed. Raises
    RuntimeError naming the runs that failed."""
    from gaca.orchestration.dispatch import JobPool
    from gaca.orchestration.job import run as run_job
    from gaca.orchestration.plan import DONE, attach_states, plan, recorded_runs

    chosen = finalists(study, search.confirm_trials)
    seeds = fresh_seeds(search)
    if not chosen or not seeds:
        return []
    configs: dict[str, Mapping[str, float]] = {"default": {}}
    configs.update({str(t.number): dict(t.params) for t in chosen})
    items: list[tuple[str, list[str], list[str]]] = [
        (BLOCK, [], trial_overrides(params, seed, run_overrides)) for params in configs.values() for seed in seeds
    ]
    runs = plan(items, session.compose)
    attach_states(runs, recorded_runs(uri, experiment))
    todo = [run for run in runs if run.state != DONE]
    print(
        f"confirming trials {', '.join(str(t.number) for t in chosen)} and the default gate on fresh seeds "
        f"{list(seeds)}: {len(todo)} of {len(runs)} runs to train",
        flush=True,
    )
    if todo:
        pool = JobPool(session.launcher(run_job), session.parallel_jobs)
        first_job = len(study.trials) * len(search.seeds)  # after every trial's job folders of this invocation
        pool.add([(run.key, first_job + run.index, session.job_overrides(run.overrides)) for run in todo])
        failed: list[str] = []
        while pool.busy:
            failed += [cast(str, key) for key, outcome in pool.poll() if not outcome.ok]  # run keys
            time.sleep(POLL_S)
        if failed:
            raise RuntimeError(
                f"{len(failed)} confirmation run(s) failed (run keys {', '.join(failed)}); rerun to retry"
            )
    recorded = recorded_runs(uri, experiment)
    finals = [recorded[run.key].final_success if run.key in recorded else None for run in runs]
    if any(value is None for value in finals):
        raise RuntimeError("a confirmation run logged no final metric")
    per_config = {
        name: cast(tuple[float, ...], tuple(finals[i * len(seeds) : (i + 1) * len(seeds)]))  # none is None: checked
        for i, name in enumerate(configs)
    }
    return [
        Confirmed(t.number, dict(t.params), float(t.value), per_config[str(t.number)], per_config["default"])
        for t in chosen
    ]
