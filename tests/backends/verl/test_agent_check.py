"""`gaca verl-agent check PATH` on stand-in checkouts: complete (exit 0), something missing (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaca.backends.verl.agent.check import REQUIREMENTS

from ...orchestration.conftest import gaca
from .fake_verl_agent import write_checkout

RAY_TRAINER = "verl/trainer/ppo/ray_trainer.py"
ROLLOUT = "agent_system/multi_turn_rollout/rollout_loop.py"


def test_a_complete_checkout_passes_every_item(tmp_path: Path):
    write_checkout(tmp_path)
    result = gaca("verl-agent", "check", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("  ok ") for line in lines) == len(REQUIREMENTS)
    assert lines[-1] == f"all {len(REQUIREMENTS)} present: backend=verl jobs can run this checkout unmodified"


@pytest.mark.parametrize(
    ("path", "old", "new", "problem"),
    [
        (
            RAY_TRAINER,
            "def compute_advantage(",
            "def compute_advantages(",
            "no module-level function compute_advantage",
        ),
        (
            ROLLOUT,
            ", is_train=True):",
            "):",
            "TrajectoryCollector.multi_turn_loop('self', 'gen_batch', "
            "'actor_rollout_wg', 'envs') has no is_train parameter",
        ),
        (RAY_TRAINER, "self.use_critic = ", "self.critic = ", "RayPPOTrainer.__init__ does not set self.use_critic"),
        (RAY_TRAINER, '    GiGPO = "gigpo"\n', "", "AdvantageEstimator has no member equal to 'gigpo'"),
    ],
)
def test_a_missing_function_or_signature_is_named_with_exit_2(tmp_path: Path, path, old, new, problem):
    write_checkout(tmp_path, replace={path: (old, new)})
    result = gaca("verl-agent", "check", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    missing = [line for line in result.stdout.splitlines() if line.startswith("  MISSING")]
    assert len(missing) >= 1 and all(f" {path}: " in line for line in missing)
    assert any(line.endswith(f": {problem}") for line in missing), missing
    assert f"of {len(REQUIREMENTS)} missing" in result.stdout.splitlines()[-1]


def test_a_folder_that_is_no_checkout_misses_every_file(tmp_path: Path):
    result = gaca("verl-agent", "check", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.count("file not found") == len(REQUIREMENTS)


SETUP_PINS = [
    "accelerate",
    "ray[default]>=2.41.0,<=2.50.0",
    "tensordict>=0.8.0,<=0.10.0,!=0.9.0",
    "transformers<=4.57.3",
]
REQUIREMENTS_PINS = ["ray[default]", "tensordict<=0.6.2", "transformers==4.51.1", "# vllm==0.8.4"]
"""verl-agent's pins (upstream 796ed31: setup.py's install_requires and requirements.txt), the packages
the check reads."""


def with_pins(root: Path) -> Path:
    write_checkout(root)
    (root / "setup.py").write_text(f"install_requires = {SETUP_PINS!r}\n")
    (root / "requirements.txt").write_text("\n".join(REQUIREMENTS_PINS) + "\n")
    return root


def python_with(root: Path, versions: dict[str, str]) -> Path:
    """A real interpreter (a venv without pip) in which ``versions`` are installed as far as
    ``importlib.metadata`` can tell (their dist-info metadata, no code)."""
    import subprocess
    import sys
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert sysconfig.get_python_version() in purelib
    for name, version in versions.items():
        info = Path(purelib) / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return python


@pytest.mark.parametrize(
    ("versions", "lines"),
    [
        ({"ray": "2.49.0", "tensordict": "0.6.2", "transformers": "4.51.1"}, []),
        # gaca's verl extra (verl 0.9.1) installed into verl-agent's environment
        (
            {"ray": "2.52.1", "tensordict": "0.6.2", "transformers": "5.5.3"},
            [
                "  CONFLICT ray<=2.50.0,>=2.41.0 (setup.py): ray 2.52.1 is installed, which conflicts",
                "  CONFLICT transformers<=4.57.3 (setup.py), transformers==4.51.1 (requirements.txt): transformers "
                "5.5.3 "
                "is installed, which conflicts",
            ],
        ),
        (
            {"ray": "2.49.0", "transformers": "4.51.1", "tensordict": "0.9.0"},
            [
                "  CONFLICT tensordict!=0.9.0,<=0.10.0,>=0.8.0 (setup.py), tensordict<=0.6.2 (requirements.txt): "
                "tensordict 0.9.0 is installed, which conflicts"
            ],
        ),
        (
            {"ray": "2.49.0", "transformers": "4.51.1"},
            [
                "  MISSING  tensordict!=0.9.0,<=0.10.0,>=0.8.0 (setup.py), tensordict<=0.6.2 (requirements.txt): "
                "tensordict is not installed"
            ],
        ),
    ],
)
def test_the_trainer_pythons_versions_are_checked_against_the_checkouts_pins(tmp_path: Path, versions, lines):
    checkout = with_pins(tmp_path / "checkout")
    python = python_with(tmp_path / "env", versions)
    result = gaca("verl-agent", "check", str(checkout), "--python", str(python), cwd=tmp_path)
    assert result.returncode == (2 if lines else 0), result.stdout + result.stderr
    out = result.stdout.splitlines()
    assert f"the trainer's Python ({python}) against the checkout's pins:" in out
    assert [line for line in out if line.startswith(("  CONFLICT", "  MISSING"))] == lines
    assert sum(line.startswith("  ok       ") for line in out) == 3 - len(lines)  # ray, tensordict, transformers
    assert out[-1].endswith("backend=verl jobs cannot run this checkout with this Python" if lines else "unmodified")


def test_a_trainer_python_that_cannot_run_is_one_line(tmp_path: Path):
    result = gaca(
        "verl-agent", "check", str(with_pins(tmp_path)), "--python", str(tmp_path / "no-python"), cwd=tmp_path
    )
    assert result.returncode == 2 and result.stdout == ""
    assert (
        result.stderr.strip()
        == f"gaca verl-agent check: --python {tmp_path / 'no-python'} cannot be run: No such file or directory"
    )
