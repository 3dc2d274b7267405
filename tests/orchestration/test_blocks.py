"""The block files: each a Hydra config with its command, every run valid, grids as the paper's
tables need them, and runs shared between blocks planned once."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from gaca.contract import SEEDS
from gaca.orchestration.block_files import SWEEPS_DIR, block_names, expand, load_block, load_blocks
from gaca.orchestration.plan import plan_runs
from gaca.orchestration.session import HydraSession
from gaca.policy.config import MODEL_PRESETS

EXPECTED_RUNS = {"main": 36, "detector": 9, "lambda0": 18, "modulation": 9, "alpha_c": 9, "debias": 6, "horizon": 27}
DISTINCT_RUNS_OF_ALL = 93
"""114 block runs; the errand GACA default appears in six blocks (horizon's 40-step GACA is it) and the
uniform control in three."""


@pytest.fixture(scope="module")
def every_run():
    """The plan of `gaca sweep all` (each distinct run once, with the blocks that share it)."""
    blocks = load_blocks("all")
    session = HydraSession("local", [], [b.search_path for b in blocks], Path("unused"), job_name="test")
    runs = plan_runs(blocks, [], session.compose)
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    return runs


def in_block(runs, name):
    return [run for run in runs if run.block == name or name in run.also_in]


def test_every_block_file_is_a_hydra_config_headed_by_its_command():
    assert sorted(block_names()) == sorted(EXPECTED_RUNS)
    for name in block_names():
        path = SWEEPS_DIR / f"{name}.yaml"
        lines = path.read_text().splitlines()
        assert lines[0] == "# @package _global_"
        assert any(line.startswith("#") and f"gaca sweep {name}" in line for line in lines), f"{path}: no command"
        config = OmegaConf.load(path)
        assert config.block == name
        # Cluster and launcher settings stay out of block files (conf/launcher/ and the command line).
        assert "hydra" not in config and "launcher" not in config
        seeds = ",".join(map(str, SEEDS))
        assert all(grid["seed"] == seeds for grid in config.sweep), f"{path}: seeds are {seeds} everywhere"


def test_every_run_of_every_block_composes_and_validates(every_run):
    assert {name: len(in_block(every_run, name)) for name in EXPECTED_RUNS} == EXPECTED_RUNS
    assert len(every_run) == DISTINCT_RUNS_OF_ALL
    for name in EXPECTED_RUNS:
        runs = in_block(every_run, name)
        assert sorted(run.config.seed for run in runs) == sorted(list(SEEDS) * (len(runs) // len(SEEDS)))
        if name != "main":  # ablations: the errand testbed at the tiny scale
            assert {(run.config.env.name, run.config.model.name) for run in runs} == {("errand", "tiny")}


def test_the_uniform_control_lambda0_half_and_modulation_off_run_once(every_run):
    uniform = [run for run in every_run if run.config.algorithm.detector == "uniform"]
    assert len(uniform) == 3  # one per seed
    for run in uniform:
        assert run.block == "detector" and set(run.also_in) == {"lambda0", "modulation"}
    default = [
        r
        for r in every_run
        if r.block == "alpha_c" and r.config.algorithm.method == "gaca" and r.config.algorithm.alpha_c == 1.0
    ]
    assert len(default) == 3
    assert all(set(r.also_in) == {"debias", "detector", "horizon", "lambda0", "modulation"} for r in default)


def test_command_line_overrides_replace_or_add_grid_dimensions():
    main = load_block("main")
    paper = expand(main, ["trainer=paper", "model=path", "model.path=/m/1.5B,/m/7B"])
    assert len(paper) == 36  # model=tiny,small replaced by model=path, crossed with two paths
    assert all("model=path" in run and "model=tiny" not in run for run in paper)
    assert {run[-1] for run in paper} == {"model.path=/m/1.5B", "model.path=/m/7B"}
    one_seed = expand(load_block("detector"), ["seed=1"])
    assert one_seed == [["seed=1", f"algorithm.detector={d}"] for d in ("entropy", "uniform", "random")]


def test_an_unknown_block_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown block 'detectr'; known: main, alpha_c.*all"):
        load_block("detectr")


def test_a_block_file_without_grids_is_refused(tmp_path):
    bad = tmp_path / "blocks" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text("# @package _global_\nblock: bad\nsweep: {seed: 0}\n")
    with pytest.raises(ValueError, match="'sweep' must be a non-empty list of grids"):
        load_block(str(bad))


def test_a_model_presets_sizes_are_part_of_the_run_key(tmp_path):
    """Sizes left null take the preset's: spelling them out keeps the key, other sizes change it, so a
    store holding runs of an older preset size does not pass them off as done."""
    blocks = load_blocks("detector")
    session = HydraSession("local", [], [blocks[0].search_path], tmp_path, job_name="test")

    def key(*overrides: str) -> str:
        return plan_runs(blocks, ["seed=0", "algorithm.detector=entropy", *overrides], session.compose)[0].key

    tiny = MODEL_PRESETS["tiny"]
    assert key() == key(*(f"model.{field}={value}" for field, value in tiny.items()))
    assert key() != key(f"model.intermediate_size={2 * tiny['intermediate_size']}")


def test_a_sweep_that_does_not_list_its_values_is_refused_naming_the_key():
    block = load_block("detector")
    with pytest.raises(
        ValueError, match=r"algorithm.lambda0: a sweep of a block must list its values .*interval\(0,1\)"
    ):
        expand(block, ["algorithm.lambda0=interval(0,1)"])
