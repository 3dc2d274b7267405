"""What a verl job checks on the machine it runs on before its MLflow run exists: the checkout, the
trainer's Python and that both gaca and verl import there. Each problem is one line naming the key."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gaca.backends.config import RunConfig
from gaca.backends.verl.launcher.checkout import checkout_problem
from gaca.backends.verl.launcher.job import VerlJob, trainer_python
from gaca.backends.verl.launcher.run_options import verl_options
from gaca.compose import ConfigError

IMPORT_CHECK_S = 60.0
PROBE = (
    "import importlib.util as u, sys; "
    "missing = [m for m in ('gaca', 'verl', 'agent_system') if u.find_spec(m) is None]; "
    "print(' '.join(missing)); sys.exit(1 if missing else 0)"
)
"""Run by the trainer's Python with the job's PYTHONPATH: which packages it cannot find (none imported)."""
SETUP_HINT = "make it with: bash scripts/setup-verl-agent.sh CHECKOUT [VENV]"


class TrainerUnavailable(ConfigError):
    """The trainer cannot start here; the message names the key to fix."""


def check_trainer(run: RunConfig, job: VerlJob) -> None:
    """Raise ``TrainerUnavailable`` unless ``job`` (the default trainer command) can start here."""
    backend = verl_options(run)
    if backend.verl_agent_dir is not None:
        problem = checkout_problem(backend.verl_agent_dir)
        if problem:
            raise TrainerUnavailable(f"backend.verl_agent_dir: {problem}")
    if backend.trainer_command is not None:
        return
    python = trainer_python(run)
    key = "backend.python" + (f".{run.env.name}" if isinstance(backend.python, dict) else "")
    if not Path(python).is_file() or not os.access(python, os.X_OK):
        raise TrainerUnavailable(f"{key}={python} is not an executable on this machine; {SETUP_HINT}")
    env = {**os.environ, **job.env}
    try:
        probe = subprocess.run(
            [python, "-c", PROBE], cwd=job.cwd, env=env, capture_output=True, text=True, timeout=IMPORT_CHECK_S
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise TrainerUnavailable(f"{key}={python} does not run: {error}") from None
    if probe.returncode != 0:
        missing = probe.stdout.strip() or (probe.stderr.strip().splitlines() or ["?"])[-1]
        where = "" if backend.verl_agent_dir else "; set backend.verl_agent_dir=<a verl-agent checkout>"
        raise TrainerUnavailable(f"{key}={python} cannot import {missing}{where} ({SETUP_HINT})")
