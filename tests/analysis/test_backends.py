"""The two trainers side by side (analysis.studies.backends): table numbers and figures from a store of runs
with known curves."""

import pytest
from mlflow.tracking import MlflowClient

from analysis.benches.synthetic import SyntheticRun, log_runs
from analysis.studies import backends

# (method, backend, seed) -> evaluation success at iterations 0, 5, 10 (16 tasks)
KNOWN = {
    ("gaca", "cpu", 0): [0.25, 0.5, 0.75],
    ("gaca", "cpu", 1): [0.25, 0.375, 0.5],
    ("gaca", "verl", 0): [0.25, 0.5, 0.5],
    ("gaca", "verl", 1): [0.25, 0.25, 0.5],
    ("grpo", "cpu", 0): [0.125, 0.25, 0.375],
}


@pytest.fixture
def store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runs = [
        SyntheticRun(
            method=method,
            seed=seed,
            overrides={"backend.name": backend},
            final_success=curve[-1],
            eval_curve=curve,
            histogram=False,
        )
        for (method, backend, seed), curve in KNOWN.items()
    ]
    # Neither an unfinished run nor a finished one without a final evaluation counts.
    runs.append(SyntheticRun(method="gigpo", seed=0, overrides={"backend.name": "verl"}, status="RUNNING"))
    runs.append(SyntheticRun(method="gigpo", seed=1, overrides={"backend.name": "verl"}, final_success=None))
    log_runs(MlflowClient(uri), "gaca", runs)
    return uri


def rows(output: str) -> dict[tuple[str, str], list[str]]:
    table = [line for line in output.splitlines() if line.startswith("| ") and "---" not in line][1:]
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in table]
    return {(c[0], c[1]): c[2:] for c in cells}


def test_table_gives_each_trainers_curve_gain_and_the_paired_difference(store, tmp_path, capsys):
    assert backends.main(["--tracking-uri", store, "--out", str(tmp_path / "figures")]) == 0
    out = capsys.readouterr().out
    table = rows(out)
    assert set(table) == {("gaca", "CPU backend"), ("gaca", "verl-agent on CPU"), ("grpo", "CPU backend")}
    # gains 50 and 25 points: mean 37.5, t(0.975, 1) = 12.706 x 17.68 / sqrt 2 = 158.8
    assert table[("gaca", "CPU backend")][:3] == ["2", "25.0 / 43.8 / 62.5", "+37.5 [-121.3, +196.3]"]
    # gains 25 and 25: no spread, the interval is the point
    assert table[("gaca", "verl-agent on CPU")][:3] == ["2", "25.0 / 37.5 / 50.0", "+25.0 [+25.0, +25.0]"]
    assert table[("grpo", "CPU backend")][:3] == ["1", "12.5 / 25.0 / 37.5", "+25.0"]
    # training metrics of the synthetic runs: 1 / (1 + step) over iterations 0..9, the same in every run
    assert table[("gaca", "CPU backend")][3:] == ["100.0 → 10.0", "1.00 → 0.10"]
    # verl - cpu finals: seed 0 -25, seed 1 0: mean -12.5, half width 12.706 x 17.68 / sqrt 2 = 158.8
    assert (
        "- gaca: final success verl − cpu -12.5 [-171.3, +146.3] points over 2 seeds (per seed 0: -25.0, 1: +0.0)"
        in out
    )
    assert "- grpo" not in out  # one trainer only: nothing to pair


def test_one_figure_per_method_with_both_trainers(store, tmp_path, capsys):
    folder = tmp_path / "figures"
    backends.main(["--tracking-uri", store, "--out", str(folder)])
    written = sorted(p.name for p in folder.iterdir())
    assert written == ["backends_gaca.pdf", "backends_gaca.png", "backends_grpo.pdf", "backends_grpo.png"]
    assert all((folder / name).stat().st_size > 5_000 for name in written)


def test_an_empty_store_says_so_in_one_line(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    log_runs(MlflowClient(uri), "gaca", [SyntheticRun(status="RUNNING")])
    with pytest.raises(SystemExit, match="^python -m analysis.studies.backends: no finished run"):
        backends.main(["--tracking-uri", uri, "--out", str(tmp_path / "figures")])
    assert not (tmp_path / "figures").exists()


def test_block_selects_the_runs_of_one_block(store, tmp_path, capsys):
    backends.main(["--tracking-uri", store, "--block", "adhoc", "--out", str(tmp_path / "figures")])
    assert len(rows(capsys.readouterr().out)) == 3  # every synthetic run is of block adhoc
    with pytest.raises(SystemExit, match="no finished run"):
        backends.main(["--tracking-uri", store, "--block", "detector", "--out", str(tmp_path / "figures")])


def test_methods_keeps_the_variants_named(store, tmp_path, capsys):
    backends.main(["--tracking-uri", store, "--methods", "grpo,gigpo", "--out", str(tmp_path / "figures")])
    assert set(rows(capsys.readouterr().out)) == {("grpo", "CPU backend")}


def test_an_unknown_experiment_names_the_known_ones(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    log_runs(MlflowClient(uri), "gaca", [SyntheticRun()])
    with pytest.raises(SystemExit, match="no MLflow experiment 'nope'.*known: \\['Default', 'gaca'\\]"):
        backends.main(["--tracking-uri", uri, "--experiment", "nope"])
