"""The grid: cells are configurations, and equivalent spellings share one cell."""

from __future__ import annotations

import subprocess
import sys

import pytest

from analysis.runs.blocks import DEFAULT_CONFIG, canonical_config, get_block, report_blocks
from gaca.contract import parse_param


def key(**overrides):
    return canonical_config({**DEFAULT_CONFIG, **{f"algorithm.{k}": v for k, v in overrides.items()}})


def test_the_fixed_weight_configuration_is_one_cell_in_three_blocks():
    uniform = get_block("detector").variant("uniform").key()
    assert get_block("lambda0").variant("lambda0=0.5").key() == uniform
    assert get_block("modulation").variant("modulation=0").key() == uniform
    assert key(detector="entropy", alpha_lambda=0, beta_lambda=0, alpha_c=0.7) == uniform
    assert key(detector="uniform", alpha_c=0.5) == uniform


def test_the_default_row_of_each_ablation_is_gaca_with_every_default():
    default = report_blocks().main.variant("gaca").key()
    for block, name in [
        ("detector", "entropy"),
        ("modulation", "modulation=0.5"),
        ("alpha_c", "alpha_c=1"),
        ("debias", "entropy"),
        ("lambda0", "gaca"),
    ]:
        assert get_block(block).variant(name).key() == default


def test_params_a_method_does_not_read_do_not_split_its_cell():
    assert key(method="grpo", lambda0=0.1, detector="loo") == key(method="grpo")
    assert key(method="gigpo", alpha_c=0.3) == key(method="gigpo")
    assert key(method="gigpo", singleton_fallback="zero") != key(method="gigpo")


def test_values_logged_as_strings_or_ints_give_the_same_key():
    logged = {**DEFAULT_CONFIG, "algorithm.lambda0": "0.5", "algorithm.alpha_c": 1, "algorithm.step_weight": "1"}
    assert canonical_config({key: parse_param(str(value)) for key, value in logged.items()}) == canonical_config(
        DEFAULT_CONFIG
    )


def test_a_missing_param_is_named():
    config = dict(DEFAULT_CONFIG)
    del config["algorithm.lambda0"]
    with pytest.raises(KeyError, match="algorithm.lambda0"):
        canonical_config(config)


def test_unknown_block_lists_the_known_ones():
    with pytest.raises(ValueError, match="known: main, detector"):
        get_block("nope")


def test_every_variant_within_a_block_is_a_distinct_cell():
    for block in report_blocks().by_name.values():
        keys = [variant.key() for variant in block.variants]
        assert len(set(keys)) == len(keys), block.name
        assert len(block.seeds) == 3


def test_importing_the_analysis_composes_no_sweep_file():
    """The blocks are read by an explicit call (``report_blocks``), not on import."""
    code = (
        "import analysis.report, analysis.runs.cells, analysis.runs.blocks as b; "
        "print(b._ablations.cache_info().misses + b._report_blocks.cache_info().misses)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0"
