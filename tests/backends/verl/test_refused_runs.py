"""Run configs the CPU trainer takes and a verl job cannot run as it would: one line naming the key, exit 2,
before any run or file exists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ESTIMATOR = '''
"""An installed estimator without a verl implementation: its spec sets no verl_name."""
from gaca.estimators.methods.paper import gaca
from gaca.estimators.registry import ESTIMATORS, EVERY_ESTIMATOR_READS, GATE_READS, STEP_LEVEL_READS, EstimatorSpec


@ESTIMATORS.register("cpu_only_gate", spec=EstimatorSpec(EVERY_ESTIMATOR_READS + STEP_LEVEL_READS + GATE_READS,
                                                        needs_anchors=True, gated=True))
def cpu_only_gate(batch, config, rules):
    return gaca(batch, config, rules)
'''


def install_plugin(folder: Path) -> None:
    """The estimator as pip would install it: its module and its ``gaca.plugins`` entry point."""
    folder.mkdir(parents=True)
    (folder / "cpu_only_gate.py").write_text(ESTIMATOR)
    info = folder / "cpu_only_gate-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cpu-only-gate\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[gaca.plugins]\ncpu_only_gate = cpu_only_gate\n")


def gaca_train(folder: Path, site: Path | None, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    return subprocess.run(
        [sys.executable, "-m", "gaca.cli", "train", *overrides],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (
            ["algorithm=gaca", "algorithm.method=cpu_only_gate"],
            "algorithm.method=cpu_only_gate has no verl implementation",
        ),
        (["model.decoding=constrained"], "model.decoding=constrained: verl's rollout samples"),
    ],
    ids=["estimator-without-verl-name", "constrained-decoding"],
)
def test_a_run_verl_cannot_run_is_one_line_naming_the_key_before_anything_exists(tmp_path, overrides, key):
    install_plugin(tmp_path / "site")
    folder = tmp_path / "work"
    folder.mkdir()
    done = gaca_train(
        folder,
        tmp_path / "site",
        "backend=verl_cpu",
        f"backend.python={sys.executable}",
        "trainer=short",  # the default's linear schedule is refused first
        "trainer.init=scratch",
        *overrides,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and key in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert list(folder.iterdir()) == []  # no MLflow store, no run folder, no exported policy
