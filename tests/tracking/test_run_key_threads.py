"""torch's thread count is part of a run's identity (it changes results in their last bits), except
one thread, so that one-thread runs (every sweep job's default) keep their keys."""

from __future__ import annotations

import torch

from gaca.compose import compose, validate
from gaca.tracking.identity import run_key


def key_of(*overrides: str) -> tuple[str, dict]:
    run, resolved = validate(compose(list(overrides)))
    return run_key(resolved), resolved


def test_one_thread_keeps_the_key_and_another_count_is_another_run():
    one, resolved = key_of("trainer.threads=1")
    without = {**resolved, "trainer": {k: v for k, v in resolved["trainer"].items() if k != "threads"}}
    assert run_key(without) == one
    assert key_of("trainer.threads=2")[0] != one


def test_null_threads_becomes_the_count_torch_uses_here():
    key, resolved = key_of("trainer.threads=null")
    assert resolved["trainer"]["threads"] == torch.get_num_threads()
    assert key == key_of(f"trainer.threads={torch.get_num_threads()}")[0]


def test_a_verl_runs_key_ignores_the_cpu_thread_count():
    paper = ("backend=verl", "trainer=paper", "env=household", "model=path", "model.path=/models/Qwen2.5-1.5B-Instruct")
    assert key_of(*paper, "trainer.threads=1")[0] == key_of(*paper, "trainer.threads=2")[0]
