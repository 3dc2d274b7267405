"""``gaca search gate [--trials N] [--workers K] [overrides]``: Optuna over the gate's parameters.

Optuna (5.x) is driven directly with ask/tell (the Hydra Optuna sweeper pins optuna<3, whose
storage fails here: docs/dependencies.md). A trial trains GACA once per seed, each seed a job through the same
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

The best trial's mean is a maximum over noisy trials, biased upward: after the study the best and
the runner-up train again on fresh seeds beside the default gate (``confirm``), and ``best.yaml``
gives their paired difference from it with its interval, next to the search's own mean, and the
selection bias between the two.

The package by job: ``cli`` (the command line), ``config`` (the search config, a trial's runs),
``loop`` (ask/tell), ``progress`` (the runs' curves from MLflow, pruning), ``confirm`` (the winners on
fresh seeds), ``reports``.
"""

from gaca.orchestration.search.cli import main
from gaca.orchestration.search.config import SearchConfig, load_search
from gaca.orchestration.search.progress import common_means, report_progress

__all__ = ["SearchConfig", "common_means", "load_search", "main", "report_progress"]
