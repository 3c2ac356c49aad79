"""The backends `bench.terravis --backends` puts side by side, each opened on one checkpoint folder.

Why: the same TerraVis run through the transformers backend, vLLM in this process and a vLLM
OpenAI server shows what each engine's scheduling and prefix cache buy on identical prompts.
Each backend here says how its judge is opened and closed, where its prefix-cache counters are
read (the judge's own stats: transformers' prefix KV store, vllm's cached tokens per request; or
the server's Prometheus `/metrics`) and, for vLLM, where its metrics are read (`bench.prometheus`:
the engine's `get_metrics()` or the server's `/metrics`), each before and after a run.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from vlmjudge.testing.processes import ServerDidNotStart, free_port, running_server

from .prometheus import read_engine, read_server

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
    served), cumulative, so a run's figures are the difference of two reads; for vLLM its metrics
    (`bench.prometheus` readings), and for a server the client's seconds waiting on requests."""

    judge: Any
    counters: Callable[[], tuple[int, int]]
    source: str
    metrics: Callable[[], dict[str, float]] | None = None
    client_seconds: Callable[[], float] | None = None


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
    judge = load_judge(checkpoint, backend="vllm", dtype=dtype, skip_mm_profiling=True, progress=False,
                       disable_log_stats=False, **extra)  # its metrics, for the phases and queues
    stats = judge.stats
    try:
        yield Opened(judge, lambda: (stats.prompt_tokens, stats.prefix_cache_tokens),
                     "the engine's cached tokens per request (judge.stats)", lambda: read_engine(judge.llm))
    finally:
        judge.close()


def server_command(checkpoint: str, port: int, dtype: str, media_root: str, cuda: bool | None = None) -> list[str]:
    """The command that serves `checkpoint` on 127.0.0.1:`port`: `vlmjudge serve` (vLLM's OpenAI
    server with the vllm backend's settings and its first-options processor), reading images
    from `media_root`; vLLM's defaults on a GPU, its 32-token blocks on a CPU."""
    cuda = on_cuda() if cuda is None else cuda
    return [sys.executable, "-m", "vlmjudge.serve", "--model", checkpoint, "--served-model-name", SERVED_NAME,
            "--port", str(port), "--dtype", dtype, "--media-root", media_root,
            "--", "--max-model-len", "4096", "--skip-mm-profiling",
            *([] if cuda else ["--block-size", str(CPU_BLOCK_SIZE)])]


@contextmanager
def served(checkpoint: str, dtype: str, media_root: str) -> Iterator[str]:
    """A local server on `checkpoint`, its base URL while the block runs; stopped after it.
    `Unavailable` (with its log's tail) if it exits or stays silent past `SERVER_START_S`."""
    engine_environment()
    port = free_port()
    log_path = os.path.join(tempfile.mkdtemp(prefix="vlmjudge-bench-server-"), "server.log")
    base = f"http://127.0.0.1:{port}"
    try:
        with running_server(server_command(checkpoint, port, dtype, media_root), base + "/health", log_path,
                            timeout_s=SERVER_START_S, poll_s=2):
            yield base
    except ServerDidNotStart as error:
        raise Unavailable(f"the vLLM server did not start: {error}") from error


def server_counters(base: str) -> tuple[int, int]:
    """(prefix-cache queries, hits), in tokens, from the server's `/metrics`."""
    reading = read_server(base)
    return int(reading.get("vllm:prefix_cache_queries", 0)), int(reading.get("vllm:prefix_cache_hits", 0))


def _served_judge(checkpoint: str, dtype: str) -> Iterator[Opened]:
    """The openai judge on a local vLLM server (images written once into the folder the server
    may read, sent once each), its counters and metrics read from `/metrics`."""
    _need("vllm", "vllm-serve")
    _need("openai", "vllm-serve")
    from vlmjudge import load_judge
    media_root = tempfile.mkdtemp(prefix="vlmjudge-bench-media-")
    with served(checkpoint, dtype, media_root) as base:
        judge = load_judge(SERVED_NAME, backend="openai", base_url=base + "/v1", progress=False, media_dir=media_root)
        yield Opened(judge, lambda: server_counters(base),
                     "the server's /metrics (vllm:prefix_cache_queries, vllm:prefix_cache_hits)",
                     lambda: read_server(base), lambda: judge.stats.request_seconds)


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


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.backends --print-server-command [--gpu]`: the `vlmjudge serve` command the
    vllm-serve backend runs, printed as the engine's command line (`--print-command`), not run."""
    import argparse
    import subprocess
    p = argparse.ArgumentParser(prog="python -m bench.backends", description=main.__doc__.splitlines()[0])
    p.add_argument("--print-server-command", action="store_true", required=True)
    p.add_argument("--gpu", action="store_true", help="the GPU's settings (bf16, vLLM's default blocks)")
    args = p.parse_args(argv)
    argv_ = server_command("CHECKPOINT", 8000, "bfloat16" if args.gpu else "float32", tempfile.gettempdir(),
                           cuda=args.gpu)
    cut = argv_.index("--")
    return subprocess.run(argv_[:cut] + ["--print-command"] + argv_[cut:], check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
