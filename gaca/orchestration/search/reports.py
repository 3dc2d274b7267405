"""What a study has found: ``best.yaml`` (the best trial's overrides), ``history.csv`` (every
trial) and, at the end, the optimisation history plot, in ``reports/search/<study>/``."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from omegaconf import OmegaConf

from gaca.orchestration.search.config import SearchConfig

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gaca.orchestration.search.confirm import Confirmed


def write_reports(
    search: SearchConfig, study: Any, plot: bool = False, confirmed: Sequence[Confirmed] = (), fresh: Sequence[int] = ()
) -> None:
    """``best.yaml`` (the best trial's overrides, and the finalists ``confirmed`` on the ``fresh``
    seeds with the selection bias) and ``history.csv`` (every trial); the plot at the end."""
    from optuna.trial import TrialState

    folder = search.report_dir
    folder.mkdir(parents=True, exist_ok=True)
    trials = study.get_trials(deepcopy=False)
    keys = list(search.space)
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
        best = study.best_trial
        summary = {
            "study": search.study,
            "storage": search.storage,
            "best_trial": best.number,
            "mean_final_eval_success": best.value,
            "seeds": list(search.seeds),
            "params": dict(best.params),
            "overrides": " ".join(f"{k}={v!r}" for k, v in best.params.items()),
            "trials": {state.name.lower(): sum(t.state == state for t in trials) for state in TrialState},
        }
        if confirmed:
            summary["confirmation"] = {
                "note": "the search's mean is a maximum over noisy trials (biased upward); each finalist re-ran on "
                "fresh seeds beside the default gate: difference paired by seed, 95% t interval; "
                "selection bias = search mean - fresh mean",
                "finalists": [finalist.summary(fresh) for finalist in confirmed],
            }
        (folder / "best.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(summary)))
    if plot and complete:
        import matplotlib

        matplotlib.use("Agg")
        from optuna.visualization.matplotlib import plot_optimization_history

        axes = plot_optimization_history(study)
        cast("Figure", axes.figure).savefig(folder / "history.png", dpi=120, bbox_inches="tight")
