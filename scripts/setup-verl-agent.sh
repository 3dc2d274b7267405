#!/usr/bin/env bash
# The Python environment verl-agent's own trainer runs in (backend=verl), made from a checkout:
#   bash scripts/setup-verl-agent.sh CHECKOUT [VENV]     # VENV defaults to .venv-verl-agent here
# It installs the checkout's own pins (its requirements.txt: transformers 4.51.1, tensordict <= 0.6.2, ...)
# without the GPU-only and developer packages (flash-attn, liger-kernel, vllm, pre-commit, wandb, the vision
# extras), the packages its modules import at load time (fastapi, uvicorn, cachetools, openai, pillow, codetiming,
# torchdata), torch ${GACA_TORCH_VERSION:-2.13.0} (the CPU build on a machine without CUDA), MLflow (verl's logger)
# and this package, so that the hooks import in the trainer. Only the package index is used; 2.2 GB, 3-5 min.
# The checkout itself is not modified and not installed: jobs put it on PYTHONPATH (backend.verl_agent_dir).
# Then: gaca train backend=verl backend.verl_agent_dir=CHECKOUT backend.python=VENV/bin/python ...
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bash scripts/setup-verl-agent.sh CHECKOUT [VENV] (CHECKOUT: a verl-agent git checkout)" >&2
  exit 2
fi
checkout="$1"
venv="${2:-$repo/.venv-verl-agent}"
if ! problem=$("${PYTHON:-python3}" -S "$repo/gaca/backends/verl/launcher/checkout.py" "$checkout" 2>&1); then
  echo "setup-verl-agent: $problem" >&2
  exit 2
fi
checkout="$(cd "$checkout" && pwd)"

# verl-agent's requirements.txt, less what needs a GPU or is for its developers, one requirement a line.
mapfile -t pins < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$checkout/requirements.txt" \
  | grep -v -E '^$|^(flash-attn|liger-kernel|vllm|pre-commit|wandb|qwen-vl-utils)([^A-Za-z0-9_-]|$)')
# setup.py's version ranges for what requirements.txt lists without one (ray: >=2.41,<=2.50), so that the
# environment satisfies what `gaca verl-agent check` reads from both files.
mapfile -t -O "${#pins[@]}" pins < <("${PYTHON:-python3}" -S - "$checkout" <<'PY'
import ast, re, sys
from pathlib import Path
root = Path(sys.argv[1])
name = lambda text: re.split(r"[\[<>=!~; ]", text, maxsplit=1)[0].lower().replace("_", "-")
unversioned = set()
for line in (root / "requirements.txt").read_text().splitlines():
    line = line.split("#", 1)[0].strip()
    if line and not re.search(r"[<>=!~]", line):
        unversioned.add(name(line))
for node in ast.walk(ast.parse((root / "setup.py").read_text())):
    if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "install_requires" for t in node.targets):
        for item in node.value.elts:
            if re.search(r"[<>=!~]", item.value) and name(item.value) in unversioned:
                print(item.value)
PY
)
extra=(fastapi uvicorn cachetools openai pillow codetiming torchdata "mlflow>=3.1,<4")

if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
pip_() {  # pip with its exit status, without this machine's notices about missing local index folders
  local log
  if ! log=$("$venv/bin/python" -m pip "$@" 2>&1); then
    printf '%s\n' "$log" >&2
    return 1
  fi
  printf '%s\n' "$log" | awk '/BuildBackendWarning: Editable installation/ {skip=1} !skip {print} /with strategy, WheelFile/ {skip=0}' \
    | grep -v -e '^WARNING: Location' -e '^$' || true
}
pip_ install --quiet --upgrade pip
"$venv/bin/python" -c "import torch" 2>/dev/null || pip_ install --quiet "torch==${GACA_TORCH_VERSION:-2.13.0}"
# One resolve for both: verl-agent's pins win where gaca's ranges allow (gaca takes transformers >= 4.50).
pip_ install --quiet "${pins[@]}" "${extra[@]}" -e "$repo"
"$venv/bin/python" - "$checkout" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import torch, transformers, tensordict, ray, gaca
import verl
print(f"verl-agent trainer environment ready: verl {verl.__version__}, transformers {transformers.__version__}, "
      f"tensordict {tensordict.__version__}, torch {torch.__version__}, ray {ray.__version__}, gaca {gaca.__version__}")
EOF
echo "use it: gaca train backend=verl backend.verl_agent_dir=$checkout backend.python=$venv/bin/python ..."
