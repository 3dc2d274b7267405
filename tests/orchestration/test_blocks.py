"""The block files: each a Hydra config with its command, every run valid, grids as the paper's
tables need them, and runs shared between blocks planned once.

The run counts are not written down here: an independent expansion of ``sweeps/*.yaml`` (the product
of each grid's comma lists, seeds included, each point's config deduplicated by its run key) says
what the orchestration must plan, so a new row in a block file needs no edit of this file.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from gaca.compose import CONF_DIR
from gaca.compose.blocks import SWEEPS_DIR, block_names, expand, load_block, load_blocks
from gaca.compose.session import HydraSession
from gaca.contract import SEEDS
from gaca.orchestration.plan import plan_runs
from gaca.policy.config import MODEL_PRESETS
from gaca.tracking.identity import run_key


def grid_points(name: str) -> list[list[str]]:
    """Every run of block ``name`` as ``key=value`` overrides: per grid of its file, the product of its comma lists."""
    points = []
    for grid in OmegaConf.to_container(OmegaConf.load(SWEEPS_DIR / f"{name}.yaml"))["sweep"]:
        dimensions = [[f"{key}={value}" for value in str(values).split(",")] for key, values in grid.items()]
        points += [list(point) for point in itertools.product(*dimensions)]
    return points


def expected_runs(session: HydraSession) -> dict[str, set[tuple[str, ...]]]:
    """Block -> the identities of its runs: each grid point applied to the block's composed file by
    hand (an ``algorithm=NAME`` group is its YAML's method on GACA's fields; another group, e.g.
    ``env=shop``, is kept as written), identical configs counted once by their run key."""
    identities: dict[str, set[tuple[str, ...]]] = {}
    for name in block_names():
        base = session.compose(load_block(name).base_overrides())
        identities[name] = set()
        for point in grid_points(name):
            config, groups = base.copy(), []
            OmegaConf.set_struct(config, False)
            for override in point:
                key, value = override.split("=", 1)
                if key == "algorithm":
                    algorithm = OmegaConf.load(CONF_DIR / "algorithm" / f"{value}.yaml")
                    if "defaults" in algorithm:  # else it is gaca.yaml itself, the fields the block file starts from
                        assert set(algorithm) == {"defaults", "method"}, f"{value}.yaml: more than a method on GACA's"
                    config.algorithm.method = algorithm.method
                elif "." in key or key == "seed":
                    OmegaConf.update(config, key, yaml.safe_load(value), merge=True)
                else:
                    groups.append(override)
            identities[name].add((run_key(OmegaConf.to_container(config, resolve=True)), *groups))
    return identities


@pytest.fixture(scope="module")
def every_run():
    """The plan of `gaca sweep all` (each distinct run once, with the blocks that share it), and the
    runs each block should have by the independent expansion."""
    blocks = load_blocks("all")
    session = HydraSession("local", [], [b.search_path for b in blocks], Path("unused"), job_name="test")
    runs = plan_runs(blocks, [], session.compose)
    expected = expected_runs(session)
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    return runs, expected


def in_block(runs, name):
    return [run for run in runs if run.block == name or name in run.also_in]


def test_every_block_file_is_a_hydra_config_headed_by_its_command():
    assert block_names()[0] == "main" and {"detector", "lambda0", "modulation"} <= set(block_names())
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
    every_run, expected = every_run
    assert {name: len(in_block(every_run, name)) for name in expected} == {
        name: len(identities) for name, identities in expected.items()
    }
    assert len(every_run) == len(set().union(*expected.values()))
    for name in expected:
        runs = in_block(every_run, name)
        assert sorted(run.config.seed for run in runs) == sorted(list(SEEDS) * (len(runs) // len(SEEDS)))
        if name != "main":  # ablations: the errand testbed at the tiny scale
            assert {(run.config.env.name, run.config.model.name) for run in runs} == {("errand", "tiny")}


def test_the_uniform_control_lambda0_half_and_modulation_off_run_once(every_run):
    every_run, _ = every_run
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
    assert len(paper) == len(grid_points("main"))  # model=tiny,small replaced by model=path, crossed with two paths
    assert all("model=path" in run and "model=tiny" not in run for run in paper)
    assert {run[-1] for run in paper} == {"model.path=/m/1.5B", "model.path=/m/7B"}
    one_seed = expand(load_block("detector"), ["seed=1"])
    assert one_seed == [["seed=1", *point[1:]] for point in grid_points("detector") if point[0] == "seed=0"]


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
