"""A detector registered by an installed plugin trains through the real CLI, with nothing else changed."""

import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

PLUGIN = '''
"""A detector that halves the entropy detector's spread around one."""
from gaca.estimators.detectors import entropy_detector
from gaca.estimators.registry import DETECTORS, DetectorSpec


@DETECTORS.register("halved", spec=DetectorSpec(reads=("alpha_c",), needs_nll=True))
def halved(batch, step_return, config):
    return 0.5 + 0.5 * entropy_detector(batch, step_return, config)
'''


def install_plugin(folder):
    """The module and its distribution's ``gaca.plugins`` entry point, as pip would install them."""
    (folder / "halved_detector.py").write_text(PLUGIN)
    info = folder / "halved_detector-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: halved-detector\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[gaca.plugins]\nhalved = halved_detector\n")


def test_a_plugin_detector_trains_one_iteration_through_the_cli(tmp_path, tiny_overrides):
    install_plugin(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    overrides = [
        *tiny_overrides,
        "trainer.iterations=1",
        "algorithm.detector=halved",
        f"tracking.uri={uri}",
        f"output_dir={tmp_path / 'runs'}",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "gaca.cli", "train", *overrides], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["algorithm.detector"] == "halved"
    assert "diag/criticality_std" in run.data.metrics


def test_an_unknown_detector_is_rejected_naming_the_key_and_the_known_ones(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gaca.cli", "train", "algorithm.detector=nope", f"output_dir={tmp_path}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 2
    assert "algorithm.detector must be one of ['entropy', 'loo', 'random', 'uniform'], got 'nope'" in done.stderr
