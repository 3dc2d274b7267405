#!/usr/bin/env bash
# Lint, format check and type check with the tools in .venv (bash scripts/setup.sh dev verl installs them).
# Runs all three and fails if any of them fails. Fix with: .venv/bin/ruff check --fix; .venv/bin/ruff format
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
.venv/bin/ruff check gaca analysis tests scripts || status=1
.venv/bin/ruff format --check gaca analysis tests scripts || status=1
.venv/bin/mypy gaca analysis || status=1
exit "$status"
