"""`gaca bench train` trains in a temporary folder: ended by SIGTERM, it leaves none behind."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ...orchestration.conftest import cli_env, wait_for
from .conftest import TINY


def test_sigterm_mid_training_exits_143_and_leaves_no_temporary_folder(tmp_path: Path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    overrides = [o for o in TINY if not o.startswith("trainer=")] + ["trainer.iterations=1000"]
    bench = subprocess.Popen(
        [sys.executable, "-m", "gaca.cli", "bench", "train", "--presets", "quick", *overrides],
        cwd=tmp_path,
        env=cli_env(TMPDIR=str(scratch)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the run's checkpoints appear in the temporary working folder once it trains
        wait_for(lambda: list(scratch.glob("*/runs/*/LATEST")) or bench.poll() is not None, 300, "a first checkpoint")
        assert bench.poll() is None, bench.communicate()[1][-2000:]
        bench.send_signal(signal.SIGTERM)
        _, err = bench.communicate(timeout=120)
    finally:
        bench.kill()
    assert bench.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "Traceback" not in err
    left = [path.name for path in scratch.iterdir() if not path.name.startswith("torchinductor_")]  # torch's cache
    assert not left


@pytest.mark.slow
def test_shared_start_builds_one_start_for_the_variants_that_share_it(tmp_path: Path):
    overrides = [o for o in TINY if not o.startswith("trainer=")] + ["trainer.iterations=2"]
    variants = "trainer.update=every_row;trainer.update=distinct"

    def bench(*flags: str) -> subprocess.CompletedProcess:  # without the flag each run builds its own
        args = ["bench", "train", "--presets", "quick", "--variants", variants, *flags, *overrides]
        return subprocess.run(
            [sys.executable, "-m", "gaca.cli", *args], cwd=tmp_path, env=cli_env(), capture_output=True, text=True
        )

    shared = bench("--shared-start")
    assert shared.returncode == 0, shared.stderr[-2000:]
    assert shared.stderr.count("building the starting policy") == 1  # the second variant found it cached
    rows = [line.split() for line in shared.stdout.splitlines() if line.startswith("quick ")]
    assert [row[1] for row in rows] == ["trainer.update=every_row", "trainer.update=distinct"]
    assert float(rows[0][-1]) > 0  # the start's CPU time, given apart from the run's
    assert "start cpu" in shared.stdout and list(tmp_path.iterdir()) == []
