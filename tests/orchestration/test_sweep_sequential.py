"""`gaca sweep BLOCK --until-decided`: bad input refused in one line before anything exists; then a
real block in rounds through the real CLI: decided at its last look, runs tagged with the design and
keyed as a plain sweep's, a rerun continuing from the logged seeds, another design refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gaca.compose.blocks import expand, load_block
from gaca.orchestration import sweep

from .conftest import TINY, gaca, logged_runs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["detector", "--until-decided", "--margin", "-1"], "--margin must be in [0, 100) points, got -1"),
        (["detector", "--until-decided", "--alpha", "0.5"], "--alpha must be in (0, 0.5), got 0.5"),
        (["detector", "--until-decided", "--alpha", "0"], "--alpha must be in (0, 0.5), got 0"),
        (["detector", "--until-decided", "--first-round", "1"], "--first-round must be at least 2 seeds, got 1"),
        (
            ["detector", "--until-decided", "--max-seeds", "2"],
            "--max-seeds must be at least the first round's 3 seeds, got 2",
        ),
        (
            ["horizon", "--until-decided"],
            "block 'horizon' makes no claim comparisons to decide; --until-decided works for:",
        ),
        (["detector", "--max-seeds", "6"], "--max-seeds only go with --until-decided"),
        (["detector", "--until-decided", "seed=0,1"], "--until-decided chooses the seeds itself; drop seed=0,1"),
        (["all", "--until-decided"], "--until-decided runs one block at a time, not all"),
    ],
)
def test_bad_input_is_one_line_before_anything_runs(workspace: Path, capsys, argv, message):
    assert sweep.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (workspace / "mlflow.db").exists() and not (workspace / "multirun").exists()


@pytest.mark.slow
def test_a_block_runs_in_rounds_until_decided_and_resumes_with_its_design(tmp_path: Path):
    # Looks after 2 and 3 seeds: no exact test decides anything with 3 seeds (its smallest p is 2^-3 =
    # 12.5%), so the budget runs out.
    design = ["--until-decided", "--first-round", "2", "--round", "1", "--max-seeds", "3"]
    result = gaca("sweep", "alpha_c", *design, *TINY, cwd=tmp_path, timeout=1500)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "=== round 1 of at most 2: seeds 0-1 ===" in out and "=== round 2 of at most 2: seeds 0-2 ===" in out
    assert "look 1 of 2 at 2 seeds:" in out and "2 of 2 comparisons remain" in out
    assert "alpha_c=0.7 − alpha_c=1: +0.00 pts, 97.5% interval [" in out
    assert "(n=3; no gain) → continue, undecided after look 2" in out
    assert "alpha_c: the budget of 3 seeds is spent; 2 of 2 comparisons remain undecided" in out

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runs = logged_runs(uri)
    block_runs = len(expand(load_block("alpha_c"), ["seed=0,1,2"]))  # from the file: a row added there keeps it true
    assert len(runs) == block_runs
    tags = {run.tags["gaca.sequential.alpha_c"] for run in runs}
    assert len(tags) == 1 and tags.pop() == "looks=2,3;test=signflip;spending=obf;assume=shift;alpha=0.05;margin=0.03"
    experiment = MlflowClient(uri).get_experiment_by_name("gaca")
    assert [key for key in experiment.tags if key.startswith("gaca.sequential.")]
    # The tag leaves the run keys alone: a plain sweep of the same seeds finds every run done.
    plain = gaca("sweep", "alpha_c", "seed=0,1,2", "--dry-run", *TINY, cwd=tmp_path)
    assert f"{block_runs} runs ({block_runs} done)" in plain.stdout, plain.stdout

    again = gaca("sweep", "alpha_c", *design, *TINY, cwd=tmp_path)
    assert again.returncode == 0 and "nothing to launch" in again.stdout
    assert "the budget of 3 seeds is spent" in again.stdout
    other = gaca("sweep", "alpha_c", "--until-decided", "--max-seeds", "6", *TINY, cwd=tmp_path)
    assert other.returncode == 2
    assert (
        "this block was started with the design 'looks=2,3;" in other.stderr and "nothing was launched" in other.stderr
    )
    assert len(logged_runs(uri)) == block_runs


@pytest.mark.slow
def test_one_claim_runs_only_the_rows_it_compares(tmp_path: Path):
    # Concavity compares lambda0 = 0.5 with 0 and 1: 3 of the block's 6 rows, never 0.25, 0.75 or
    # the adaptive gate. The tiny runs all score 0: neither comparison is decided with 3 seeds.
    design = ["--until-decided", "--first-round", "2", "--round", "1", "--max-seeds", "3"]
    claim = ["--claim", "lambda0 sweep concave"]
    result = gaca("sweep", "lambda0", *design, *claim, *TINY, cwd=tmp_path, timeout=1500)
    assert result.returncode == 0, result.stderr
    assert "lambda0=0.5 − lambda0=0: +0.00 pts" in result.stdout and "lambda0=0.5 − lambda0=1" in result.stdout
    assert "lambda0: the budget of 3 seeds is spent; 2 of 2 comparisons remain undecided" in result.stdout
    runs = logged_runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert len(runs) == 9
    assert {(run.params["algorithm.lambda0"], run.params["algorithm.alpha_lambda"]) for run in runs} == {
        ("0", "0"),
        ("0.5", "0"),
        ("1", "0"),
    }


def test_the_design_is_stored_per_block_and_run_overrides_but_not_per_place():
    from gaca.orchestration.until_decided import store_key

    assert store_key("detector", []) == store_key("detector", ["tracking.uri=sqlite:///a.db", "output_dir=/b"])
    assert store_key("detector", ["env=shop"]) == store_key("detector", ["output_dir=/b", "env=shop"])
    assert store_key("detector", ["env=shop"]) != store_key("detector", []) != store_key("lambda0", [])


def test_a_round_runs_only_the_rows_an_undecided_comparison_reads():
    from hydra.core.global_hydra import GlobalHydra

    from gaca.compose.blocks import expand, load_blocks
    from gaca.compose.session import HydraSession
    from gaca.orchestration.plan import plan_runs
    from gaca.orchestration.until_decided import needed_runs

    blocks = load_blocks("lambda0")
    session = HydraSession("local", [], [b.search_path for b in blocks], Path("unused"), job_name="test")
    try:
        runs = plan_runs(blocks, ["seed=0,1"], session.compose)
    finally:
        GlobalHydra.instance().clear()
    kept, skipped = needed_runs("lambda0", runs, {"lambda0=0", "lambda0=0.5"})
    rows = len(expand(blocks[0], ["seed=0"]))  # from the file: a row added there keeps this true
    assert len(runs) == 2 * rows and len(kept) == 4
    assert sorted({run.resolved["algorithm"]["lambda0"] for run in kept}) == [0.0, 0.5]
    assert all(run.resolved["algorithm"]["alpha_lambda"] == 0 for run in kept)
    assert {"lambda0=0.25", "lambda0=0.75", "lambda0=1", "gaca"} <= set(skipped) and len(skipped) == rows - 2
    assert needed_runs("lambda0", runs, set())[0] == []


def test_a_claim_the_block_does_not_make_is_one_line(workspace: Path, capsys):
    assert sweep.main(["lambda0", "--until-decided", "--claim", "detector order"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "--claim 'detector order' is not a claim of block 'lambda0'; allowed: " in err
    assert "'lambda0 sweep concave'" in err and "'no fixed lambda0 matches'" in err
    assert not (workspace / "mlflow.db").exists() and not (workspace / "multirun").exists()


def test_a_dry_run_lists_the_first_round_of_the_rows_the_claim_compares(workspace: Path, capsys):
    argv = ["lambda0", "--until-decided", "--claim", "lambda0 sweep concave", "--dry-run", *TINY]
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    assert "lambda0: 9 runs (9 to run)" in out, out
    assert "algorithm.lambda0=0.25" not in out and "algorithm.lambda0=0.75" not in out
    assert not (workspace / "multirun").exists()


def test_a_block_started_with_the_earlier_betting_design_continues_with_it(tmp_path: Path):
    from analysis.stats.sequential import TEST_BETTING, Schedule
    from gaca.orchestration.until_decided import earlier_design

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("gaca")
    requested = Schedule.rounds(9)
    assert earlier_design(uri, "gaca", "gaca.sequential.detector", requested) == requested  # nothing stored
    client.set_experiment_tag(experiment, "gaca.sequential.detector", "looks=3,6,9;test=betting;alpha=0.05;margin=0.03")
    continued = earlier_design(uri, "gaca", "gaca.sequential.detector", requested)
    assert continued.test == TEST_BETTING and continued.looks == (3, 6, 9)
    other = Schedule.rounds(12)  # another budget: not the stored design, refused by stored_conflict
    assert earlier_design(uri, "gaca", "gaca.sequential.detector", other) == other
