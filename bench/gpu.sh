#!/usr/bin/env bash
# TerraVis throughput on a lent H200: Qwen3-VL at the real 8B configuration, random weights
# built on the GPU (nothing on disk), 200 images at 1024^2, positive rate forced to 0.3.
# Wheels the machine lacks (xgrammar and what it needs) travel in .whl/ (see bench/README.md).
#   bench/gpu.sh            the GPU run (about 4 minutes)
#   bench/gpu.sh --dry-run  the same code on CPU with a mini random model and few images
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -c "import torch, transformers, xgrammar; print('torch', torch.__version__, 'transformers', transformers.__version__, 'xgrammar', getattr(xgrammar, '__version__', 'present'))"
if [ "${1:-}" = "--dry-run" ]; then
  shift
  python3 -m bench.random_vlm --config mini --device cpu --images 3 --size 256 --reference-images 2 "$@"
  python3 -m bench.terravis --images 2 --size 256 --model tiny --ablation-images 1
  exit 0
fi
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
timeout 290 python3 -m bench.random_vlm --config 8b --device cuda --images 200 --size 1024 \
  --positive-rate 0.3 --reference-images 8 "$@"
