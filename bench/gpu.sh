#!/usr/bin/env bash
# TerraVis throughput on a lent H200: Qwen3-VL at the real 8B configuration, random weights
# built on the GPU (nothing on disk), 200 images at 1024^2, positive rate forced to 0.3.
# Prints the benchmark's table (prefill beside its ideal, per stage too), the prefix KV store's
# hits, skipped tokens and evictions, then images/s, prefill tokens/s and MFU: the FLOPs of
# what ran (vision tower per image encoded, prefill tokens run, prefixes the KV store served
# not counted, and generated tokens) over wall time x 790 TFLOP/s bf16.
# Wheels the machine lacks (xgrammar and what it needs) travel in .whl/ (see bench/README.md).
# Then, where vllm imports, the three backends at 8B (`bench.side_by_side`): transformers,
# in-process vLLM and the openai backend on a `vlmjudge serve` server, on the same random 8B
# written to a folder (BACKENDS_MODEL: a checkpoint folder or Hub id instead), BACKENDS_IMAGES
# images at 1024^2 (default 32): images/s, prompt, prefill and generated tokens, prefix-cache
# hits, the phases, the scheduler's queues, the host's load, the records compared, the targets.
#   bench/gpu.sh            the GPU runs (at most 5 + 9.5 minutes)
#   bench/gpu.sh --dry-run  the same code on CPU with a mini random model and few images; the
#                           server's GPU command printed (`vlmjudge serve --print-command`), not run
# KV_CACHE_MB: the prefix KV store's budget (default 32768 on the GPU). A block of 32 images
# keeps each image's eligibility prefix until its detection stage, and its detection prefix
# until its evidence (about 0.3 GB per image prefix at 8B): the backend's 4 GiB default would
# evict most of a block's prefixes before their next stage.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  site="${TMPDIR:-/tmp}/vlmjudge-gpu-site"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl
  export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -c "import sys, torch, transformers, xgrammar; print('python', sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'xgrammar', getattr(xgrammar, '__version__', 'present'))"
if [ "${1:-}" = "--dry-run" ]; then
  shift
  kv="${KV_CACHE_MB:-256}"
  python3 -m bench.random_vlm --config mini --device cpu --images 3 --size 256 --reference-images 2 \
    --kv-cache-mb "$kv" "$@"
  python3 -m bench.terravis --images 2 --size 256 --model tiny --ablation-images 1 --kv-cache-mb "$kv"
  python3 -m bench.side_by_side --backends transformers,vllm,vllm-serve --model random:mini --device cpu \
    --images 2 --size 256
  python3 -m bench.backends --print-server-command --gpu
  echo "dry run passed"
  exit 0
fi
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
timeout 300 python3 -m bench.random_vlm --config 8b --device cuda --images 200 --size 1024 \
  --positive-rate 0.3 --reference-images 8 --kv-cache-mb "${KV_CACHE_MB:-32768}" "$@"
if python3 -c "from vllm import LLM" >/dev/null 2>&1; then
  timeout 570 python3 -m bench.side_by_side --backends transformers,vllm,vllm-serve \
    --model "${BACKENDS_MODEL:-random:8b}" --device cuda --images "${BACKENDS_IMAGES:-32}" --size 1024 \
    --positive-rate 0.3
else
  echo "the backends side by side skipped: vllm does not import on this machine"
fi
