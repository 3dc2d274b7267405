"""scripts/apt-install.sh waits while another apt or dpkg holds the package manager's lock, and fails at
once on any other apt error. apt-get is a stand-in script on PATH here: the real one needs root and the
network, and a real lock held by a second package manager cannot be arranged in a test."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "apt-install.sh"


def fake_apt(tmp_path: Path, busy: int, error: str = "E: Could not get lock /var/lib/dpkg/lock-frontend.") -> Path:
    """An apt-get that fails with ``error`` ``busy`` times, then succeeds; it logs each call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {tmp_path / "calls"}\n'
        f"n=$(wc -l < {tmp_path / 'calls'})\n"
        f'if [ "$n" -le {busy} ]; then echo "{error}" >&2; exit 100; fi\n'
    )
    apt.chmod(0o755)
    return bin_dir


def run(tmp_path: Path, bin_dir: Path, wait: str = "5") -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GACA_APT_LOCK_POLL": "0.05"}
    env["GACA_APT_LOCK_WAIT"] = wait
    command = f". {SCRIPT}; apt_install pkg-a pkg-b"
    if os.getuid() != 0:  # the script asks sudo for root; the stand-in needs none
        command = f'sudo() {{ "$@"; }}; export -f sudo; {command}'
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)


def test_a_held_lock_is_waited_for(tmp_path):
    result = run(tmp_path, fake_apt(tmp_path, busy=3))
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("waiting for the package manager") == 3
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 5 and "install" in calls[-1] and calls[-1].endswith("pkg-a pkg-b")


def test_a_lock_held_too_long_fails_naming_the_wait(tmp_path):
    result = run(tmp_path, fake_apt(tmp_path, busy=1000), wait="0.2")
    assert result.returncode == 1
    assert "lock was still held after 0.2 s (GACA_APT_LOCK_WAIT)" in result.stderr


def test_another_apt_error_fails_at_once(tmp_path):
    result = run(tmp_path, fake_apt(tmp_path, busy=1, error="E: Unable to locate package pkg-a"))
    assert result.returncode == 1
    assert "Unable to locate package" in result.stderr and "waiting" not in result.stderr
    assert len((tmp_path / "calls").read_text().splitlines()) == 1
