#!/usr/bin/env bash
# Set everything up and run the whole test suite (CI runs exactly this through .ci/run).
# Lint, format and type checks (scripts/lint.sh: ruff, mypy) run first. Tests run in GACA_TEST_WORKERS
# pytest-xdist workers (default 2; tests sharing the SLURM node or the database run in one worker, in
# turn: tests/conftest.py), and the 20 slowest are listed at the end. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev verl alfworld
bash scripts/lint.sh
.venv/bin/python -m pytest -n "${GACA_TEST_WORKERS:-2}" --dist loadgroup --durations=20 "$@"
