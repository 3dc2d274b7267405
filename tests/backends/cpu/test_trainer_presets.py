"""The trainer presets: ``short`` is the earlier default value for value, so the runs made on it keep
their keys; ``quick`` and ``paper`` do not move with the default; the default is the stability study's
setting."""

from __future__ import annotations

import pytest

from gaca.compose import compose, validate
from gaca.tracking.identity import run_key

EARLIER_DEFAULT = (
    "trainer.iterations=25",
    "trainer.tasks_per_iteration=12",
    "trainer.lr_schedule=constant",
    "trainer.kl_coef=0.01",
    "trainer.bc.steps=250",
)
"""What the default was before the stability study's setting replaced it (docs/testbed.md)."""
PAPER = ("backend=verl", "trainer=paper", "env=household", "model=path", "model.path=/models/Qwen2.5-1.5B-Instruct")


def key_of(*overrides: str) -> str:
    _, resolved = validate(compose(list(overrides)))
    return run_key(resolved)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        # the keys these runs had before the default changed (computed at 8e50f19), one thread (every
        # sweep job's count)
        (("trainer=short", "trainer.threads=1"), "c4a3591e7c64d75c"),
        (("trainer=short", "algorithm.detector=uniform", "seed=2", "trainer.threads=1"), "843214ab8b7da73c"),
        (("trainer=quick", "trainer.threads=1"), "3912a54927d0812f"),
        (PAPER, "d98b5ef3f6ee3270"),
    ],
    ids=["short", "short-uniform-seed-2", "quick", "paper"],
)
def test_runs_of_the_earlier_presets_keep_their_keys(overrides, key):
    assert key_of(*overrides) == key


def test_short_is_the_default_with_the_earlier_values_spelled_out():
    assert key_of("trainer=short", "trainer.threads=1") == key_of(*EARLIER_DEFAULT, "trainer.threads=1")
    assert key_of("trainer.threads=1") != key_of("trainer=short", "trainer.threads=1")


def test_the_main_block_runs_on_short_unless_the_command_line_names_a_trainer():
    from gaca.compose.blocks import expand, load_block

    main = load_block("main")
    assert all("trainer=short" in run for run in expand(main, []))
    assert all("trainer=paper" in run and "trainer=short" not in run for run in expand(main, ["trainer=paper"]))


def test_the_default_is_the_annealed_setting_and_quick_keeps_a_constant_rate():
    default, _ = validate(compose([]))
    trainer = default.trainer
    spelled = (trainer.iterations, trainer.tasks_per_iteration, trainer.lr_schedule, trainer.kl_coef, trainer.bc.steps)
    assert spelled == (40, 24, "linear", 0.1, 500)
    quick, _ = validate(compose(["trainer=quick"]))
    assert (quick.trainer.lr_schedule, quick.trainer.kl_coef) == ("constant", 0.01)  # its runs can be extended
