"""scripts/gpu-check.sh on a machine without CUDA: one line, exit 0 (the CUDA path needs a GPU)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_without_cuda_it_says_so_in_one_line_and_exits_0():
    # CUDA_VISIBLE_DEVICES="" hides any GPU, so the test means the same on a GPU machine.
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu-check.sh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "gpu check: no CUDA device here (torch.cuda.is_available() is False); nothing to check"
    ]
