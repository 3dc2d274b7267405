"""The soak benchmark for K = 2: sweeps killed at random moments (the driver with its jobs, or one
job) and rerun lose nothing and duplicate nothing; every value equals an uninterrupted sweep's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaca.bench.soak import CHECKS, QUICK, soak

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1200)
def test_two_random_kills_and_reruns_leave_every_run_finished_once_with_the_same_values(tmp_path: Path):
    one_run = [o if not o.startswith("algorithm.detector=") else "algorithm.detector=entropy" for o in QUICK]
    result = soak(2, seed=1, folder=tmp_path, block=one_run)
    assert result["runs per sweep"] == 1 and result["kills"] == 2
    for measure in CHECKS:
        assert result[measure] == 0, (measure, result)
