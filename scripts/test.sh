#!/usr/bin/env bash
# Set everything up and run the whole test suite (CI runs exactly this through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev verl alfworld
.venv/bin/python -m pytest "$@"
