#!/usr/bin/env bash
# Set everything up and run the whole test suite (CI runs exactly this through .ci/run).
# GACA_LINT=1 also runs scripts/lint.sh (ruff and mypy) before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev verl alfworld
if [ "${GACA_LINT:-0}" = 1 ]; then
  bash scripts/lint.sh
fi
.venv/bin/python -m pytest "$@"
