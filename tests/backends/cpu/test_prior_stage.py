"""The base policy's prior stage: it goes on until every pivot is right about as often as the env asks."""

import re

from gaca.backends.cpu.start import PRIOR_CHECK_TASKS, initial_policy, prior_accuracy
from gaca.envs import make_family

SMALL_CLONE = ("trainer.bc.steps=20", "trainer.bc.episodes=8", "trainer.bc.batch_size=4")
"""A clone far smaller than the default's: what these tests check is the prior stage after it."""


def _build(compose_run, tmp_path, capsys, *overrides):
    run, _ = compose_run("env=errand", "env.knobs.num_goals=2", "env.horizon=20", *SMALL_CLONE, *overrides)
    family = make_family(run.env)
    policy = initial_policy(run, family, tmp_path / "bc-cache")
    said = re.search(r"prior stage: (\d+) updates, right (\d\.\d\d) of the time", capsys.readouterr().err)
    return run, family, policy, int(said[1]), float(said[2])


def test_the_prior_stage_goes_on_while_a_pivot_is_below_its_target(compose_run, tmp_path, capsys):
    run, family, policy, updates, reached = _build(
        compose_run,
        tmp_path,
        capsys,
        "env.knobs.prior_accuracy=1.0",
        "trainer.bc.prior_steps=10",
        "trainer.bc.prior_max_steps=30",
    )
    assert updates == 30  # 10 updates leave both pivots far below 0.95, so it went on up to the cap
    check = family.prior_choices(family.train_task_ids[:PRIOR_CHECK_TASKS])
    assert {c.pivot for c in check} == {"object", "end"}
    assert reached == round(prior_accuracy(policy, check, run), 2)


def test_without_headroom_the_prior_stage_runs_exactly_prior_steps(compose_run, tmp_path, capsys):
    *_, updates, _ = _build(
        compose_run,
        tmp_path,
        capsys,
        "env.knobs.prior_accuracy=1.0",
        "trainer.bc.prior_steps=10",
        "trainer.bc.prior_max_steps=0",
    )
    assert updates == 10
    *_, updates, _ = _build(
        compose_run,
        tmp_path,
        capsys,
        "env.knobs.prior_accuracy=0.05",
        "trainer.bc.prior_steps=10",
        "trainer.bc.prior_max_steps=500",
        "seed=1",
    )
    assert updates == 10  # a target of 0.05 is met at once (chance is 1/3 and 1/2)


def test_building_the_start_says_what_it_does_every_50_updates(compose_run, tmp_path, capsys):
    run, _ = compose_run(
        "env=errand",
        "env.knobs.num_goals=2",
        "env.horizon=20",
        "trainer.bc.steps=100",
        "trainer.bc.episodes=8",
        "trainer.bc.batch_size=4",
        "env.knobs.prior_accuracy=1.0",
        "trainer.bc.prior_steps=60",
        "trainer.bc.prior_max_steps=0",
    )
    initial_policy(run, make_family(run.env), tmp_path / "bc-cache")
    lines = re.findall(r"gaca train: starting policy: (.+)", capsys.readouterr().err)
    assert lines == ["cloning 50/100 updates", "cloning 100/100 updates", "the prior stage, 50/60 updates"]
