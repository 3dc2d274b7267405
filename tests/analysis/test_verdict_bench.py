"""`gaca bench verdicts`: the verdicts' level and power on a fixed subset of the project's worlds, and
what a malformed world file gets."""

from __future__ import annotations

import csv
import io
import json
import math
from importlib import resources

import pytest

from analysis.benches import verdicts
from analysis.stats.sequential import NONE, SHIFT
from gaca import cli

WORLDS = verdicts.parse_worlds(resources.files("analysis").joinpath("data/verdict_worlds.json").read_text())
BY_NAME = {world.name: world for world in WORLDS}
REPLICATES = 1000
TOLERANCE = 3 * math.sqrt(0.025 * 0.975 / REPLICATES)
"""Three simulation standard errors of a rate of 2.5%."""
SYMMETRIC_NULLS = (
    "null, paired sd 5",
    "null: learn or collapse half the time",
    "null: near the ceiling (98, sd 2, shared seed 4)",
    "testbed null: lambda0 = 0.5 vs 0, symmetrized",
)


def rows(names, seeds):
    found = verdicts.simulate([BY_NAME[name] for name in names], seeds, REPLICATES, assume=(SHIFT,))
    return {(r.world, r.test, r.design, r.seeds): r for r in found}


@pytest.mark.slow
def test_power_at_the_seed_counts_a_laptop_affords():
    found = rows(["shift 10, paired sd 10", "shift 5, paired sd 5"], (10, 15))
    for world in ("shift 10, paired sd 10", "shift 5, paired sd 5"):
        assert found[(world, "signflip", "fixed", 10)].holds >= 0.70
        assert found[(world, "betting", "fixed", 10)].holds == 0.0  # the earlier test decides nothing
    assert found[("shift 10, paired sd 10", "signflip", "sequential", 15)].holds >= 0.80


@pytest.mark.slow
def test_holds_and_contradicted_keep_half_the_level_on_symmetric_nulls():
    found = rows(SYMMETRIC_NULLS, (10,))
    for (world, test, design, _), row in found.items():
        assert row.holds <= 0.025 + TOLERANCE, (world, test, design)
        assert row.contradicted <= 0.025 + TOLERANCE, (world, test, design)


@pytest.mark.slow
def test_the_shift_assumption_fails_where_the_bench_says_it_does():
    # a few seeds that learn: a real 6-point gain reads as "does not help" far more often than 5%
    found = rows(["rare learner: a learns 1 seed in 10 (to 60), b never"], (10,))
    assert found[("rare learner: a learns 1 seed in 10 (to 60), b never", "signflip", "fixed", 10)].does_not_help > 0.2


def run(capsys, *argv):
    status = cli.main(["bench", "verdicts", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_csv_rows_for_every_world_design_and_seed_count(tmp_path, capsys):
    worlds = tmp_path / "w.json"
    worlds.write_text(json.dumps([{"name": "tie", "pairs": [[0.5, 0.5], [0.6, 0.4], [0.4, 0.6]]}]))
    status, out, _ = run(capsys, "--worlds", str(worlds), "--seeds", "6", "--replicates", "50", "--format", "csv")
    assert status == 0
    table = list(csv.DictReader(io.StringIO(out)))
    assert {"world", "design", "seeds", "holds", "contradicted", "equivalent", "does_not_help", "assume"} <= set(
        table[0]
    )
    assert {(r["test"], r["assume"], r["design"]) for r in table} == {
        (test, mode, design) for test, mode in verdicts.TESTS for design in ("fixed", "sequential")
    }
    assert all(0.0 <= float(r[c]) <= 1.0 for r in table for c in ("holds", "contradicted", "equivalent"))
    status, out, _ = run(capsys, "--worlds", str(worlds), "--seeds", "6", "--replicates", "20", "--assume", NONE)
    assert status == 0 and "sign-flip" in out


@pytest.mark.parametrize(
    ("worlds", "message"),
    [
        (
            [{"name": "w", "a": [[0.5, 0.5, 0.1]], "b": [[1, 0.5, 0.1]]}],
            "world 'w': key 'a': the weights must sum to 1",
        ),
        ([{"name": "w", "a": [[1, 1.5, 0.1]], "b": [[1, 0.5, 0.1]]}], "world 'w': key 'a': a mean must lie in [0, 1]"),
        ([{"name": "w", "a": [[1, 0.5, 0.1]], "b": [[1, 0.5, -0.1]]}], "world 'w': key 'b': an sd must be >= 0"),
        ([{"name": "w", "a": [[1, 0.5, 0.1]]}], "world 'w': missing key 'b'"),
        ([{"name": "w", "a": [[1, 0.5, 0.1]], "b": [[1, 0.5, 0]], "seed_sd": -1}], "world 'w': key 'seed_sd'"),
        ([{"a": [[1, 0.5, 0.1]], "b": [[1, 0.5, 0.1]]}], "world 0: key 'name'"),
        ([{"name": "p", "pairs": [[0.5, 2]]}], "world 'p': key 'pairs'"),
    ],
)
def test_a_malformed_world_is_one_line_naming_the_world_and_the_key(tmp_path, capsys, worlds, message):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(worlds))
    status, out, err = run(capsys, "--worlds", str(path))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--alpha", "0.7"], "--alpha must be in (0, 0.5)"),
        (["--margin", "-1"], "--margin must be in [0, 100) points"),
        (["--assume", "normal"], "--assume must be one of shift, none"),
        (["--seeds", "2"], "--seeds must each be at least 3"),
    ],
)
def test_bad_options_are_one_line_before_any_simulation(tmp_path, capsys, argv, message):
    path = tmp_path / "w.json"
    path.write_text(json.dumps([{"name": "tie", "pairs": [[0.5, 0.5]]}]))
    status, out, err = run(capsys, "--worlds", str(path), *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_the_symmetry_e_process_keeps_its_level_and_decides_agreeing_seeds():
    import numpy as np

    rng = np.random.default_rng(3)
    null = rng.normal(0.0, 0.1, (2000, 15)) * rng.choice([-1.0, 1.0], (2000, 15))
    assert verdicts.symmetry_eprocess(null, (3, 6, 9, 12, 15), 0.025).mean() <= 0.025
    assert verdicts.symmetry_eprocess(np.full((1, 15), 0.3), (3, 6, 9, 12, 15), 0.025)[0]
    assert not verdicts.symmetry_eprocess(np.full((1, 15), -0.3), (3, 6, 9, 12, 15), 0.025)[0]
