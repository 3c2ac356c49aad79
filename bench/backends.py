"""The backends `bench.terravis --backends` puts side by side, each opened on one checkpoint folder.

Why: the same TerraVis run through the transformers backend, vLLM in this process and a vLLM
OpenAI server shows what each engine's scheduling and prefix cache buy on identical prompts.
Each backend here says how its judge is opened and closed and where its prefix-cache counters
are read: the judge's own stats (transformers: the prefix KV store; vllm: the engine's cached
tokens per request) or the server's Prometheus `/metrics`, read before and after a run.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from vlmjudge.testing.processes import ServerDidNotStart, free_port, running_server

#: The backends `--backends` knows, in the order the help lists them.
NAMES = ("transformers", "vllm", "vllm-serve")
#: The model name the local server publishes (the openai judge asks for it).
SERVED_NAME = "bench"
#: Seconds a local server may take to answer /health (a CPU start is 80-150 s).
SERVER_START_S = 900
#: vLLM's smallest CPU attention block: its default (128) is longer than short prompts, so
#: nothing would be cached.
CPU_BLOCK_SIZE = 32


class Unavailable(Exception):
    """A backend that cannot run here (not installed, or its server did not start)."""


@dataclass
class Opened:
    """A judge and its prefix-cache counters: (prompt tokens looked up, of them those the cache
    served), cumulative, so a run's figures are the difference of two reads."""

    judge: Any
    counters: Callable[[], tuple[int, int]]
    source: str


def parse_backends(text: str) -> list[str]:
    """The names in a comma-separated list, in order, each once.

    >>> parse_backends("vllm, transformers,vllm")
    ['vllm', 'transformers']
    """
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise ValueError(f"unknown backend(s) {unknown or text!r}; choose from {', '.join(NAMES)}")
    return names


def on_cuda() -> bool:
    """Whether a CUDA device is present (vLLM then runs its GPU build with its own defaults)."""
    import torch
    return torch.cuda.is_available()


def engine_environment() -> None:
    """vLLM's settings on these machines (unless already set): the engine's queue on loopback,
    and on a CPU its platform, a 1 GiB KV cache and every cache folder in a throwaway one."""
    os.environ.setdefault("VLLM_HOST_IP", "127.0.0.1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    if on_cuda():
        return
    home = tempfile.mkdtemp(prefix="vlmjudge-bench-vllm-")
    for name, value in {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "1",
                        "VLLM_CACHE_ROOT": os.path.join(home, "vllm"),
                        "TORCHINDUCTOR_CACHE_DIR": os.path.join(home, "inductor")}.items():
        os.environ.setdefault(name, value)


def _need(module: str, backend: str) -> None:
    """Raise `Unavailable` when `module` cannot be found (nothing is imported)."""
    if importlib.util.find_spec(module) is None:
        raise Unavailable(f"{backend} needs the {module} package, which is not installed here")


@contextmanager
def opened(name: str, checkpoint: str, dtype: str, device: str | None) -> Iterator[Opened]:
    """The judge of backend `name` on `checkpoint`, closed (engine or server stopped) on exit."""
    if name == "transformers":
        yield from _transformers(checkpoint, dtype, device)
    elif name == "vllm":
        yield from _vllm(checkpoint, dtype)
    elif name == "vllm-serve":
        yield from _served_judge(checkpoint, dtype)
    else:
        raise ValueError(f"unknown backend {name!r}")


def _transformers(checkpoint: str, dtype: str, device: str | None) -> Iterator[Opened]:
    """The in-process transformers judge; it prefills what its prefix KV store does not serve."""
    from vlmjudge import load_judge
    judge = load_judge(checkpoint, backend="transformers", dtype=dtype, device=device, progress=False)
    stats = judge.stats
    yield Opened(judge, lambda: (stats.prefill_tokens + stats.prefix_cache_tokens, stats.prefix_cache_tokens),
                 "the judge's prefix KV store (judge.stats)")


def _vllm(checkpoint: str, dtype: str) -> Iterator[Opened]:
    """vLLM's engine in this process (`backend="vllm"`), its cached tokens read per request."""
    _need("vllm", "vllm")
    engine_environment()
    from vlmjudge import load_judge
    extra = {} if on_cuda() else {"block_size": CPU_BLOCK_SIZE}
    judge = load_judge(checkpoint, backend="vllm", dtype=dtype, skip_mm_profiling=True, progress=False, **extra)
    stats = judge.stats
    try:
        yield Opened(judge, lambda: (stats.prompt_tokens, stats.prefix_cache_tokens),
                     "the engine's cached tokens per request (judge.stats)")
    finally:
        judge.close()


def server_command(checkpoint: str, port: int, dtype: str) -> list[str]:
    """The command that serves `checkpoint` on 127.0.0.1:`port`: `vlmjudge serve` (vLLM's OpenAI
    server with the vllm backend's settings and its first-options processor)."""
    return [sys.executable, "-m", "vlmjudge.serve", "--model", checkpoint, "--served-model-name", SERVED_NAME,
            "--port", str(port), "--dtype", dtype, "--", "--max-model-len", "4096", "--skip-mm-profiling",
            *([] if on_cuda() else ["--block-size", str(CPU_BLOCK_SIZE)])]


@contextmanager
def served(checkpoint: str, dtype: str) -> Iterator[str]:
    """A local server on `checkpoint`, its base URL while the block runs; stopped after it.
    `Unavailable` (with its log's tail) if it exits or stays silent past `SERVER_START_S`."""
    engine_environment()
    port = free_port()
    log_path = os.path.join(tempfile.mkdtemp(prefix="vlmjudge-bench-server-"), "server.log")
    base = f"http://127.0.0.1:{port}"
    try:
        with running_server(server_command(checkpoint, port, dtype), base + "/health", log_path,
                            timeout_s=SERVER_START_S, poll_s=2):
            yield base
    except ServerDidNotStart as error:
        raise Unavailable(f"the vLLM server did not start: {error}") from error


def metric_total(text: str, name: str) -> float:
    """The sum over label sets of a Prometheus counter (`name` or `name_total`) in `/metrics` text.

    >>> metric_total('vllm:prefix_cache_hits_total{engine="0"} 64.0\\nvllm:prefix_cache_hits_created 1.7e9', "vllm:prefix_cache_hits")
    64.0
    """
    total = 0.0
    for line in text.splitlines():
        metric, _, value = line.rpartition(" ")
        if metric.split("{", 1)[0] in (name, name + "_total"):
            total += float(value)
    return total


def server_counters(base: str) -> tuple[int, int]:
    """(prefix-cache queries, hits), in tokens, from the server's `/metrics`."""
    with urllib.request.urlopen(base + "/metrics", timeout=30) as response:
        text = response.read().decode()
    return (int(metric_total(text, "vllm:prefix_cache_queries")), int(metric_total(text, "vllm:prefix_cache_hits")))


def _served_judge(checkpoint: str, dtype: str) -> Iterator[Opened]:
    """The openai judge on a local vLLM server, its counters read from `/metrics`."""
    _need("vllm", "vllm-serve")
    _need("openai", "vllm-serve")
    from vlmjudge import load_judge
    with served(checkpoint, dtype) as base:
        judge = load_judge(SERVED_NAME, backend="openai", base_url=base + "/v1", progress=False)
        yield Opened(judge, lambda: server_counters(base),
                     "the server's /metrics (vllm:prefix_cache_queries, vllm:prefix_cache_hits)")


def free_memory() -> None:
    """Return a dropped judge's or model's GPU memory, so that the next engine finds it free."""
    import gc

    import torch
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def describe(value: Any) -> str:
    """One line for a skipped backend's reason."""
    return " ".join(str(value).split())
