"""`gaca search`: the pruner's feed by hand, then a persistent study through the real CLI: a
trial pruned with its jobs cancelled, and a rerun that continues the study and takes up a trial
an earlier driver left running."""

from __future__ import annotations

import csv
from pathlib import Path

import optuna
import pytest
from omegaconf import OmegaConf
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from gaca.contract import SEEDS
from gaca.orchestration import search
from gaca.orchestration.search import common_means, load_search, report_progress

from .conftest import TINY, gaca, logged_runs


def test_common_means_average_the_seeds_at_steps_all_have_reached():
    histories = [{0: 0.0, 2: 0.5, 4: 1.0}, {0: 0.5, 2: 0.25}, {0: 1.0, 2: 0.0, 4: 0.0}]
    assert common_means(histories) == [(0, 0.5), (2, 0.25)]
    assert common_means([]) == []


def test_report_progress_feeds_the_median_pruner_and_stops_at_a_prune():
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(n_startup_trials=1))
    study.add_trial(create_trial(value=0.8, intermediate_values={0: 0.6, 2: 0.7, 4: 0.8}))

    good = study.ask()
    reported, prune = report_progress(good, [{0: 0.6, 2: 0.9}, {0: 0.8, 2: 0.7}], reported=-1)
    assert (reported, prune) == (2, False)
    assert good.storage.get_trial(good._trial_id).intermediate_values == {0: 0.7, 2: 0.8}
    assert report_progress(good, [{0: 0.6, 2: 0.9, 4: 0.0}, {0: 0.8, 2: 0.7}], reported=2) == (2, False)

    poor = study.ask()
    assert report_progress(poor, [{0: 0.1, 2: 0.9}, {0: 0.2, 2: 0.9}], reported=-1) == (0, True)  # stops at step 0
    assert report_progress(study.ask(), [{0: 0.1}, {0: 0.2}], reported=-1, may_prune=False) == (0, False)


def test_search_overrides_and_clashes_are_checked_before_a_study_exists(workspace: Path, capsys):
    assert load_search("gate").seeds == SEEDS  # the file says null: the contract's seeds
    assert load_search("gate", ["search.seeds=[0,1]"], trials=4).seeds == (0, 1)
    with pytest.raises(ValueError, match="search override"):
        load_search("gate", ["search.sed=0"])
    assert search.main(["gate", "seed=3"]) == 2
    assert "['seed=3'] are set by the search itself" in capsys.readouterr().err
    assert search.main(["gate", "trainer.group_size=1"]) == 2
    assert "trainer.group_size" in capsys.readouterr().err
    assert not (workspace / "optuna.db").exists() and not (workspace / "mlflow.db").exists()


@pytest.mark.slow
def test_a_study_prunes_cancels_continues_and_takes_up_a_left_trial(tmp_path: Path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    space = load_search("gate").space
    distributions = {key: FloatDistribution(low, high) for key, (low, high) in space.items()}
    study = optuna.create_study(study_name="gate-test", storage=storage, direction="maximize")
    # A finished trial that succeeded everywhere: the next one is below the median at once.
    study.add_trial(
        create_trial(
            params={key: low for key, (low, _) in space.items()},
            distributions=distributions,
            value=1.0,
            intermediate_values={0: 1.0, 10: 1.0, 20: 1.0, 30: 1.0},
        )
    )
    common = [
        "--study",
        "gate-test",
        "--storage",
        storage,
        "--workers",
        "1",
        "search.seeds=[0,1]",
        "search.confirm.seeds=0",
        *TINY,
    ]
    # Long enough to be still running when the pruner says stop, however fast the machine trains and
    # however late a loaded machine starts the other seed's job (400 ran out once under a full suite).
    long_iterations = 5000
    long_runs = [f"trainer.iterations={long_iterations}", "trainer.eval_every=10"]

    prune_early = "search.pruner.n_startup_trials=1"
    pruning = gaca("search", "gate", "--trials", "2", *common, *long_runs, prune_early, cwd=tmp_path)

    assert pruning.returncode == 0, pruning.stderr
    assert "trial 1 pruned at iteration 0; its remaining jobs cancelled" in pruning.stdout
    study = optuna.load_study(study_name="gate-test", storage=storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.PRUNED]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    pruned = [run for run in logged_runs(uri) if run.tags.get("gaca.trial") == "1"]
    assert len(pruned) == 2 and all(run.tags["gaca.trial_state"] == "pruned" for run in pruned)
    # Their iterations never ran out. (Their MLflow status is not checked: under the full CI suite a
    # cancelled run was seen marked FINISHED.)
    assert all(
        max(step for step, _ in run.history.get("train/success_rate", [(0, 0)])) < long_iterations for run in pruned
    )

    left = study.ask()  # a trial a dead driver left running: the rerun takes it up
    left_params = {key: left.suggest_float(key, low, high) for key, (low, high) in space.items()}

    continued = gaca("search", "gate", "--trials", "3", *common, cwd=tmp_path)

    assert continued.returncode == 0, continued.stderr
    assert "2 trials ended, target 3" in continued.stdout and "taking up trial 2" in continued.stdout
    study = optuna.load_study(study_name="gate-test", storage=storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.COMPLETE]
    assert study.trials[2].params == left_params
    trial_runs = [run for run in logged_runs(uri) if run.tags.get("gaca.trial") == "2"]
    assert len(trial_runs) == 2
    for run in trial_runs:
        assert run.status == "FINISHED" and run.tags["gaca.block"] == "search" and run.tags["gaca.study"] == "gate-test"
        assert float(run.params["algorithm.lambda0"]) == pytest.approx(left_params["algorithm.lambda0"])
    mean = sum(run.history["final/eval_success_rate"][0][1] for run in trial_runs) / 2
    assert study.trials[2].value == pytest.approx(mean)

    reports = tmp_path / "reports" / "search" / "gate-test"
    history = list(csv.DictReader(open(reports / "history.csv")))
    assert [row["state"] for row in history] == ["COMPLETE", "PRUNED", "COMPLETE"]
    assert "best_trial: 0" in (reports / "best.yaml").read_text()  # the seeded 1.0 stays the best
    assert (reports / "history.png").stat().st_size > 0


@pytest.mark.slow
def test_the_winners_are_confirmed_on_fresh_seeds_against_the_default_gate(tmp_path: Path):
    # Two trials already complete (values 0.9 and 0.7 on seeds 0, 1): no new trial runs, the two
    # finalists and the default gate train on fresh seeds 2 and 3, and best.yaml pairs them.
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    space = load_search("gate").space
    distributions = {key: FloatDistribution(low, high) for key, (low, high) in space.items()}
    study = optuna.create_study(study_name="confirm-test", storage=storage, direction="maximize")
    params = [{key: low + share * (high - low) for key, (low, high) in space.items()} for share in (0.25, 0.75)]
    for value, trial_params in zip((0.9, 0.7), params):
        study.add_trial(create_trial(params=trial_params, distributions=distributions, value=value))
    result = gaca(
        "search",
        "gate",
        "--trials",
        "2",
        "--study",
        "confirm-test",
        "--storage",
        storage,
        "search.seeds=[0,1]",
        "search.confirm.seeds=2",
        *TINY,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "confirming trials 0, 1 and the default gate on fresh seeds [2, 3]: 6 of 6 runs to train" in result.stdout
    runs = logged_runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert sorted(int(run.tags["gaca.seed"]) for run in runs) == [2, 2, 2, 3, 3, 3]  # never a search seed

    def finals(lambda0: float | None) -> list[float]:
        chosen = [
            run
            for run in runs
            if (
                lambda0 is None
                and float(run.params["algorithm.lambda0"]) == 0.5
                and float(run.params["algorithm.alpha_c"]) == 1.0
            )
            or (lambda0 is not None and float(run.params["algorithm.lambda0"]) == pytest.approx(lambda0))
        ]
        return [
            run.history["final/eval_success_rate"][0][1] for run in sorted(chosen, key=lambda r: r.tags["gaca.seed"])
        ]

    best = OmegaConf.load(tmp_path / "reports" / "search" / "confirm-test" / "best.yaml")
    first, second = best.confirmation.finalists
    assert (first.trial, second.trial) == (0, 1) and list(first.fresh_seeds) == [2, 3]
    fresh, default = finals(params[0]["algorithm.lambda0"]), finals(None)
    assert first.fresh_mean == pytest.approx(sum(fresh) / 2)
    assert first.difference_vs_default == pytest.approx(sum(fresh) / 2 - sum(default) / 2)
    assert first.selection_bias == pytest.approx(0.9 - sum(fresh) / 2)
    low, high = first.difference_interval_95
    assert low <= first.difference_vs_default <= high
    assert "selection bias" in result.stdout
    # A rerun trains nothing more.
    again = gaca(
        "search",
        "gate",
        "--trials",
        "2",
        "--study",
        "confirm-test",
        "--storage",
        storage,
        "search.seeds=[0,1]",
        "search.confirm.seeds=2",
        *TINY,
        cwd=tmp_path,
    )
    assert again.returncode == 0 and "0 of 6 runs to train" in again.stdout
