#!/usr/bin/env bash
# Set everything up and run the whole test suite (CI runs exactly this through .ci/run).
# Lint, format and type checks (scripts/lint.sh: ruff, mypy) run first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev verl alfworld
bash scripts/lint.sh
.venv/bin/python -m pytest "$@"
