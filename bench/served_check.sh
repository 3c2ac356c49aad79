#!/usr/bin/env bash
# Issue 51's acceptance run, for a quiet machine: TerraVis on the three backends side by side
# (transformers, vLLM in process, the openai backend on a `vlmjudge serve` server), in the vLLM
# environment, at 16 images of 1024^2, then 8 images of 256^2 (images/s). Each run ends with
# issue 51's targets (vllm-serve / vllm seconds <= 1.5, prompt tokens <= 1.05, transformers /
# vllm seconds <= 1.5), whether the records are equal, and a warning for any backend that ran
# on a loaded host (others' CPU above a quarter core): rerun those when the host is quiet.
#   bench/served_check.sh                 both runs (about 10 minutes on 2 CPU cores, mostly engine starts)
#   bench/served_check.sh --quick         2 images of 128^2: that it runs, not figures
# VLLM_PYTHON: the vLLM environment's interpreter (default: .venv-vllm/bin/python, as README builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${VLLM_PYTHON:-.venv-vllm/bin/python}"
if [ ! -x "$python" ]; then
  echo "served_check: no interpreter at $python; build the vLLM environment (README: make_vllm_env.sh) or set VLLM_PYTHON" >&2
  exit 2
fi
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
backends=transformers,vllm,vllm-serve
if [ "${1:-}" = "--quick" ]; then
  "$python" -m bench.terravis --backends "$backends" --images 2 --size 128
  exit 0
fi
echo "== 16 images at 1024^2 (seconds, tokens)"
"$python" -m bench.terravis --backends "$backends" --images 16 --size 1024
echo "== 8 images at 256^2 (images/s)"
"$python" -m bench.terravis --backends "$backends" --images 8 --size 256
