"""The soak benchmark for K = 2: sweeps killed at random moments (the driver with its jobs, or one
job) and rerun lose nothing and duplicate nothing; every value equals an uninterrupted sweep's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaca.bench.soak import QUICK, soak

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1200)
def test_two_random_kills_and_reruns_leave_every_run_finished_once_with_the_same_values(tmp_path: Path):
    result = soak(2, seed=1, folder=tmp_path, block=QUICK)
    assert result["runs"] == 2 and result["kills"] == 2
    assert result["final sweep exit"] == 0
    for measure in ("runs not FINISHED", "MLflow runs per key > 1", "extra keys", "duplicated metric steps",
                    "runs whose values differ"):
        assert result[measure] == 0, (measure, result)
