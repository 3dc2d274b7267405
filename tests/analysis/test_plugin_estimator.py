"""A new gated estimator from an installed plugin: one registered function with its spec, its YAML
and its loop reference, nothing else. It matches its reference, trains in the main block through
`gaca sweep`, and `gaca report` gives it Table 7 rows, a criticality histogram and its colour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread
from mlflow.tracking import MlflowClient

from gaca.contract import CRITICALITY_HISTOGRAM

NAME, LABEL = "halfgate", "HalfGate"
TINY = [  # seconds per run: no behaviour cloning, one task of two rollouts, a 4-step horizon
    "trainer=quick",
    "trainer.iterations=4",
    "trainer.tasks_per_iteration=1",
    "trainer.group_size=2",
    "trainer.init=scratch",
    "trainer.eval_every=2",
    "trainer.num_eval_tasks=2",
    "trainer.transcripts=0",
    "env.horizon=4",
]

ESTIMATOR = '''
"""HalfGate: GACA with the gate's base weight halved (the episode level weighs more)."""
import dataclasses

from gaca.estimators.methods.paper import gaca
from gaca.estimators.reference import gaca_reference
from gaca.estimators.registry import ESTIMATORS, EVERY_ESTIMATOR_READS, GATE_READS, STEP_LEVEL_READS, EstimatorSpec


def halved(config):
    return dataclasses.replace(config, lambda0=config.lambda0 / 2)


def halfgate_reference(levels, config):
    return gaca_reference(levels, halved(config))


SPEC = EstimatorSpec(
    EVERY_ESTIMATOR_READS + STEP_LEVEL_READS + GATE_READS, needs_anchors=True, gated=True, label="HalfGate",
    reference=halfgate_reference,
)


@ESTIMATORS.register("halfgate", spec=SPEC)
def halfgate(batch, config, rules):
    return gaca(batch, halved(config), rules)
'''

YAML = """# HalfGate: GACA's fields, the method changed.
defaults:
  - gaca
  - _self_

method: halfgate
"""

SEARCH_PATH = '''
"""Hydra finds the plugin's config groups (its algorithm/halfgate.yaml) through this search-path plugin."""
from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class HalfgateSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="halfgate", path="pkg://halfgate_estimator.conf")
'''


def install_plugin(folder: Path) -> None:
    """The plugin as pip would install it: its package (the estimator and its YAML), the Hydra
    search-path plugin that serves the YAML, and the ``gaca.plugins`` entry point."""
    package = folder / "halfgate_estimator"
    (package / "conf" / "algorithm").mkdir(parents=True)
    (package / "__init__.py").write_text(ESTIMATOR)
    (package / "conf" / "__init__.py").write_text("")
    (package / "conf" / "algorithm" / f"{NAME}.yaml").write_text(YAML)
    (folder / "hydra_plugins").mkdir()  # a namespace package: no __init__.py
    (folder / "hydra_plugins" / "halfgate_searchpath.py").write_text(SEARCH_PATH)
    info = folder / "halfgate_estimator-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: halfgate-estimator\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[gaca.plugins]\nhalfgate = halfgate_estimator\n")


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a subprocess that has the plugin installed (this process never registers it)."""
    install_plugin(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    env.update(PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), *sys.path]), HF_HUB_OFFLINE="1")
    return env


CHECK = """
import json, random
from gaca.estimators import AdvantageConfig, compute_advantages
from gaca.estimators.reference import reference_advantages

rng = random.Random(0)
rows = []
for group in range(3):
    for traj in range(4):
        for step in range(rng.randint(1, 5)):
            reward = rng.choice([0.0, 0.0, 1.0])
            rows.append((group, 10 * group + traj, step, reward, f"s{rng.randint(0, 2)}", rng.random()))
columns = dict(zip(("group", "traj", "step", "reward", "anchor", "nll"), map(list, zip(*rows))))
config = AdvantageConfig(method="halfgate")
ours = compute_advantages(**columns, config=config)
oracle = reference_advantages(config=config, **columns)
gaca = compute_advantages(**columns, config=AdvantageConfig(method="gaca"))
print(json.dumps({"ours": ours.advantages.tolist(), "oracle": oracle["advantages"], "lam": ours.lam.tolist(),
                  "gaca_lam": gaca.lam.tolist()}))
"""


def test_a_plugin_estimator_matches_its_loop_reference(plugin_env, tmp_path):
    done = subprocess.run([sys.executable, "-c", CHECK], env=plugin_env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    np.testing.assert_allclose(result["ours"], result["oracle"], rtol=1e-6, atol=1e-6)  # float32 results
    assert max(result["lam"]) < max(result["gaca_lam"])  # its own estimator ran, not GACA's


def _has_color(png: Path, color: str) -> bool:
    pixels = imread(png)[..., :3]
    return bool((np.abs(pixels - np.array(to_rgb(color))) < 2 / 255).all(axis=-1).any())


@pytest.mark.slow
def test_a_plugin_estimator_runs_a_block_and_is_reported(plugin_env, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"

    def gaca_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "gaca.cli", *args],
            env=plugin_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )

    swept = gaca_cli(
        "sweep", "main", f"algorithm={NAME}", "seed=0", "model=tiny", "env=household", *TINY, f"tracking.uri={uri}"
    )
    assert swept.returncode == 0, swept.stdout[-2000:] + swept.stderr[-2000:]
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["algorithm.method"] == NAME
    assert "diag/lambda_mean" in run.data.metrics
    assert CRITICALITY_HISTOGRAM in {a.path for a in client.list_artifacts(run.info.run_id, "diag")}

    out = tmp_path / "reports"
    reported = gaca_cli("report", "main", "--out", str(out), "--tracking-uri", uri, "--no-pdf")
    assert reported.returncode == 0, reported.stdout[-2000:] + reported.stderr[-2000:]
    diagnostics = (out / "tables" / "table7_diagnostics.tex").read_text()
    row = next(line for line in diagnostics.splitlines() if line.startswith(LABEL))
    assert row.count("$") >= 8, row  # its diagnostics, not dashes
    assert LABEL in (out / "tables" / "table1_main.tex").read_text()
    asked = f"from gaca.estimators.registry import estimator_color; print(estimator_color({NAME!r}))"
    color = subprocess.run([sys.executable, "-c", asked], env=plugin_env, capture_output=True, text=True).stdout.strip()
    for figure in ("fig2ab_learning_curves", "criticality_main"):
        assert _has_color(out / "figures" / f"{figure}.png", color), figure
