#!/usr/bin/env bash
# The GPU check (README, "Paper-scale runs"): the estimators and the verl hooks on CUDA against the
# CPU, a quick training run on CUDA, and a timing table. Without CUDA it says so and exits 0.
# Needs nothing from the network. Arguments go to `python -m gaca.bench.gpu` (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
python=.venv/bin/python
[ -x "$python" ] || python=python3
exec "$python" -m gaca.bench.gpu "$@"
