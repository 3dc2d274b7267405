"""Whether a folder is a verl-agent checkout, from the files it must hold (standard library only, so that
``scripts/setup-verl-agent.sh`` runs it before any environment exists: ``python3 checkout.py FOLDER``)."""

from __future__ import annotations

import sys
from pathlib import Path

MARKERS = (
    "verl/trainer/main_ppo.py",
    "verl/trainer/ppo/ray_trainer.py",
    "agent_system/environments/__init__.py",
    "agent_system/multi_turn_rollout/rollout_loop.py",
    "requirements.txt",
)
"""What makes a folder verl-agent, not plain verl: its trainer, its environment managers and its pins."""


def checkout_problem(folder: str | Path) -> str | None:
    """None when ``folder`` is a verl-agent checkout, else why not, in one line."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        return f"{folder} is not a folder"
    missing = next((marker for marker in MARKERS if not (path / marker).is_file()), None)
    if missing is not None:
        return f"{folder} is not a verl-agent checkout (no {missing}); give the folder of a clone of verl-agent"
    return None


if __name__ == "__main__":
    problem = checkout_problem(sys.argv[1]) if len(sys.argv) == 2 else "usage: checkout.py FOLDER"
    if problem:
        print(problem, file=sys.stderr)
    sys.exit(2 if problem else 0)
