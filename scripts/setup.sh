#!/usr/bin/env bash
# Create .venv and install the project into it.
#   bash scripts/setup.sh            # runtime only
#   bash scripts/setup.sh dev verl   # with extras
# torch is installed first and pinned to the CPU build that pip finds locally; an unpinned torch
# can pull a multi-GB CUDA build. On a GPU machine install the torch you need first.
set -euo pipefail
cd "$(dirname "$0")/.."

quiet_pip() {  # pip, without this machine's noise about missing local index folders; keeps pip's exit status
  local log
  if ! log=$(.venv/bin/python -m pip "$@" 2>&1); then
    printf '%s\n' "$log" >&2
    return 1
  fi
  # setuptools' editable-install notice (a 10-line block ending in its source line) says nothing to a user
  printf '%s\n' "$log" | awk '/BuildBackendWarning: Editable installation/ {skip=1} !skip {print} /with strategy, WheelFile/ {skip=0}' \
    | grep -v -e '^WARNING: Location' -e '^$' || true
}

# A venv left half-made (interrupted while installing pip) is made again.
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  rm -rf .venv
  "${PYTHON:-python3}" -m venv .venv
fi
export PATH="$PWD/.venv/bin:$PATH"  # fast-downward (alfworld extra) builds with `python`: the venv's, not a shim
quiet_pip install --quiet --upgrade pip
.venv/bin/python -c "import torch" 2>/dev/null || quiet_pip install --quiet "torch==${GACA_TORCH_VERSION:-2.13.0}"
extras=$(IFS=,; echo "$*")
quiet_pip install --quiet -e ".${extras:+[$extras]}"
.venv/bin/python -c "import gaca, torch; print(f'gaca {gaca.__version__} installed with torch {torch.__version__}')"

# gaca report compiles reports/report.pdf with latexmk: install it where it is missing and this user
# can (root, or sudo without a password, on Debian/Ubuntu); GACA_SKIP_LATEX=1 skips this step.
if ! command -v latexmk >/dev/null && [ "${GACA_SKIP_LATEX:-0}" != 1 ]; then
  if command -v apt-get >/dev/null && { [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }; then
    bash scripts/install-latex.sh
  else
    echo "LaTeX not found: gaca report will write reports/report.tex but no report.pdf; for the PDF run" \
      "sudo bash scripts/install-latex.sh (Debian/Ubuntu) or install latexmk and pdflatex"
  fi
fi
