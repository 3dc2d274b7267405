"""`gaca bench verl` without a verl-agent checkout: one line naming the key, before anything is trained."""

from __future__ import annotations

from pathlib import Path

from ...orchestration.conftest import gaca as run_gaca


def test_without_a_checkout_it_is_one_line_and_nothing_is_made(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("GACA_VERL_AGENT", raising=False)
    monkeypatch.delenv("GACA_VERL_PYTHON", raising=False)
    done = run_gaca("bench", "verl", "trainer.iterations=2", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gaca bench verl: backend.verl_agent_dir is unset"), done.stderr
    assert "GACA_VERL_AGENT" in lines[0] and not list(tmp_path.iterdir())
