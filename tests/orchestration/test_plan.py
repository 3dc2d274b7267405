"""A plan composes once per run that differs only in its seed, and gets exactly the runs that composing
every run would."""

from __future__ import annotations

from pathlib import Path

from hydra.core.global_hydra import GlobalHydra

from gaca.compose import validate
from gaca.compose.blocks import load_blocks
from gaca.compose.session import HydraSession
from gaca.orchestration.plan import plan_runs
from gaca.tracking.identity import run_key


def test_seeds_share_one_composition_and_keep_every_run_key():
    blocks = load_blocks("detector")
    session = HydraSession("local", [], [b.search_path for b in blocks], Path("unused"), job_name="test")
    calls: list[list[str]] = []

    def counted(overrides: list[str]):
        calls.append(overrides)
        return session.compose(overrides)

    try:
        runs = plan_runs(blocks, ["seed=range(0,4)"], counted)
        composed_once = len(calls)
        one_by_one = {}
        for run in runs:  # the reference: every run composed by Hydra from its own overrides
            _, resolved = validate(session.compose([*blocks[0].base_overrides(), *run.grid]))
            one_by_one[run_key(resolved)] = resolved
    finally:
        GlobalHydra.instance().clear()
    variants = len(runs) // 4
    assert len(runs) == 4 * variants and variants >= 3
    assert composed_once == variants  # one composition per detector, not per seed
    assert {run.key for run in runs} == set(one_by_one)
    assert all(run.resolved == one_by_one[run.key] for run in runs)
    assert sorted(run.config.seed for run in runs) == sorted(list(range(4)) * variants)
