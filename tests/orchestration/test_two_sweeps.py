"""Two people start the same block at once on one store (local launcher): every run is trained once,
and the sweep that finds runs claimed says who holds them and waits for them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import TINY, by_key, cli_env, logged_runs

pytestmark = pytest.mark.slow

BLOCK = ["detector", "seed=0", *TINY]


@pytest.mark.timeout(900)
def test_two_sweeps_of_one_block_started_at_once_train_each_run_once(tmp_path: Path):
    drivers = [
        subprocess.Popen(
            [sys.executable, "-m", "gaca.cli", "sweep", *BLOCK],
            cwd=tmp_path,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [driver.communicate(timeout=800) for driver in drivers]
    assert [driver.returncode for driver in drivers] == [0, 0], "\n=====\n".join(o + e[-3000:] for o, e in outputs)

    runs = by_key(logged_runs(f"sqlite:///{tmp_path / 'mlflow.db'}"))  # fails on a run logged twice
    assert len(runs) == 3 and {run.status for run in runs.values()} == {"FINISHED"}
    launched = [
        int(line.split()[1]) for out, _ in outputs for line in out.splitlines() if line.startswith("launching ")
    ]
    assert sum(launched) == 3  # every run launched by exactly one of the two
    waited = [out for out, _ in outputs if "held by another sweep; waiting for them" in out]
    assert len(waited) == 1, [out for out, _ in outputs]
    held = [line for line in waited[0].splitlines() if line.startswith("  #") and "held by " in line]
    assert held and all(" pid " in line and "@" in line for line in held)
    assert "ended there" in waited[0]
    trained = [
        p for p in tmp_path.glob("multirun/detector/*/jobs/*/*_log.out") if "finished; eval success" in p.read_text()
    ]
    assert len(trained) == 3
