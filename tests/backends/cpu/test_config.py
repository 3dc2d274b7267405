"""Every config in conf/ composes and validates; bad values fail by key name before anything runs."""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import gaca
from gaca.backends.config import STARTING_POLICY_CODE, source_fingerprint
from gaca.compose import CONF_DIR, ConfigError, validate


def compose_validate(overrides):
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return validate(compose("train", overrides=overrides))


@pytest.mark.parametrize(
    "algorithm, env, model, trainer",
    list(
        itertools.product(
            ["grpo", "gigpo", "gaca"], ["household", "shop"], ["tiny", "small"], ["quick", "short", "default", "paper"]
        )
    ),
)
def test_every_combination_composes(algorithm, env, model, trainer):
    run, resolved = compose_validate([f"algorithm={algorithm}", f"env={env}", f"model={model}", f"trainer={trainer}"])
    assert (run.algorithm.method, run.env.name, run.model.name, run.trainer.preset) == (algorithm, env, model, trainer)
    assert resolved["trainer"]["preset"] == trainer


def test_path_model_needs_a_path():
    with pytest.raises(ConfigError, match="path must name a checkpoint directory"):
        compose_validate(["model=path"])
    run, _ = compose_validate(["model=path", "model.path=some/checkpoint"])
    assert run.model.path == "some/checkpoint"


@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.group_size=1", "trainer.group_size must be an int >= 2"),
        ("trainer.iterations=0", "trainer.iterations must be an int >= 1"),
        ("trainer.clip_ratio_c=0.5", "trainer.clip_ratio_c must be > 1"),
        ("trainer.init=warm", "trainer.init must be one of \\['bc', 'scratch'\\]"),
        ("trainer.lr_schedule=cosine", "trainer.lr_schedule must be one of \\['constant', 'linear'\\], got 'cosine'"),
        ("trainer.bc.noise=2", "trainer.bc.noise must be in \\[0, 1\\]"),
        ("env.horizon=0", "env.horizon must be an int in \\[1,"),
        ("algorithm.lambda0=2", "algorithm.lambda0 must be in \\[0, 1\\], got 2"),
        ("algorithm.detector=oracle", "algorithm.detector must be one of"),
        ("model.decoding=beam", "model.decoding must be one of"),
        ("seed=-1", "seed must be an int >= 0"),
    ],
)
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        compose_validate([override])


def test_the_linear_schedule_anneals_the_rate_toward_zero_and_the_paper_keeps_verls_constant_rate():
    run, _ = compose_validate(["trainer.iterations=4", "trainer.lr=0.002", "trainer.lr_schedule=linear"])
    assert [run.trainer.lr_at(i) for i in range(1, 5)] == pytest.approx([0.002, 0.0015, 0.001, 0.0005])
    constant, _ = compose_validate(["trainer.iterations=4", "trainer.lr=0.002", "trainer.lr_schedule=constant"])
    assert [constant.trainer.lr_at(i) for i in range(1, 5)] == [0.002] * 4
    paper, _ = compose_validate(["trainer=paper"])
    assert paper.trainer.lr_schedule == "constant" and paper.trainer.lr_at(150) == 1e-6
    with pytest.raises(ConfigError, match="trainer.lr_schedule=linear is the CPU trainer's"):
        compose_validate(
            ["backend=verl", "trainer=paper", "model=path", "model.path=some/checkpoint", "trainer.lr_schedule=linear"]
        )


@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.group_size=1", "trainer.group_size must be an int >= 2"),
        ("env=forest", "env/forest"),
        ("trainer.lr_typo=1", "lr_typo"),
    ],
)
def test_cli_rejects_bad_config_without_touching_mlflow(tmp_path, override, message):
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    result = subprocess.run(
        [sys.executable, "-m", "gaca.cli", "train", override],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang, not a bound on speed (the machine may be loaded)
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "runs").exists()


def test_the_clones_cache_key_holds_its_code_and_changes_with_it(tmp_path):
    """A cached behaviour clone is reused only by the code that made it (gaca.backends.config.STARTING_POLICY_CODE)."""
    run, _ = compose_validate([])
    key = run.starting_policy()
    assert key["code"] == source_fingerprint(Path(gaca.__file__).parent, STARTING_POLICY_CODE)
    assert compose_validate(["algorithm=grpo"])[0].starting_policy() == key  # the estimator does not make the clone
    assert compose_validate(["trainer.init=scratch"])[0].starting_policy() is None
    # a null horizon is the family's (errand: 40), so it clones the start of the horizon spelled out
    assert compose_validate(["env.horizon=null"])[0].starting_policy() == key
    assert compose_validate(["env.horizon=30"])[0].starting_policy() != key
    short = compose_validate(["trainer=short"])[0].starting_policy()
    assert compose_validate(["trainer=short", "backend=verl_cpu"])[0].starting_policy() == short  # one start for both

    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "room.py").write_text("DOORS = 2\n")
    (tmp_path / "loop.py").write_text("STEPS = 1\n")
    before = source_fingerprint(tmp_path, ("envs", "loop.py"))
    (tmp_path / "envs" / "room.py").write_text("DOORS = 3\n")
    assert source_fingerprint.__wrapped__(tmp_path, ("envs", "loop.py")) != before
    (tmp_path / "envs" / "room.py").write_text("DOORS = 2\n")
    (tmp_path / "envs" / "notes.txt").write_text("not code")
    assert source_fingerprint.__wrapped__(tmp_path, ("envs", "loop.py")) == before


def test_the_clones_fingerprint_covers_the_starting_policy_and_not_the_loop(tmp_path):
    """An edit to the training loop keeps every cached clone; one to the code that builds a clone does not."""
    import shutil

    package = Path(gaca.__file__).parent
    copy = tmp_path / "gaca"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_fingerprint.__wrapped__(copy, STARTING_POLICY_CODE)
    assert before == source_fingerprint(package, STARTING_POLICY_CODE)
    with open(copy / "backends" / "cpu" / "loop.py", "a") as loop:
        loop.write("\n# an edit to the loop\n")
    assert source_fingerprint.__wrapped__(copy, STARTING_POLICY_CODE) == before
    for part in ("backends/cpu/start.py", "backends/cpu/seeds.py", "policy/bc.py"):
        original = (copy / part).read_text()
        (copy / part).write_text(original + "\n# an edit to what makes a clone\n")
        assert source_fingerprint.__wrapped__(copy, STARTING_POLICY_CODE) != before, part
        (copy / part).write_text(original)
