"""Issue 52, item 6: the in-process vllm backend on a CPU gets the settings `vlmjudge serve` gives its
engine (the CPU platform, the engine's queue on loopback, a KV cache size), from the one function
both paths call, before vLLM is imported; a value the user set stays. Runs without vLLM."""
from __future__ import annotations

import sys
import types

import pytest

from vlmjudge.backends import vllm_cpu
from vlmjudge.backends.vllm_cpu import apply_cpu_settings, cpu_engine_env
from vlmjudge.serve.engine import LOOPBACK, ServeOptions, engine_env

VARIABLES = ("VLLM_TARGET_DEVICE", "VLLM_HOST_IP", "VLLM_CPU_KVCACHE_SPACE")


@pytest.fixture
def cpu_vllm(monkeypatch):
    """A machine where vLLM is installed and runs on its CPU, with none of the variables set."""
    monkeypatch.setattr(vllm_cpu, "util", types.SimpleNamespace(find_spec=lambda name: object()))
    monkeypatch.setattr(vllm_cpu, "cpu_only", lambda: True)
    for name in VARIABLES:  # set, then removed: monkeypatch puts back what was there before
        monkeypatch.setenv(name, "unset-by-test")
        monkeypatch.delenv(name)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_serve_and_the_in_process_backend_share_one_definition(host):
    environ = {"VLLM_CPU_KVCACHE_SPACE": "4"}
    assert engine_env(ServeOptions("m", host=host), environ, cpu=True) == \
        cpu_engine_env(environ, loopback=host in LOOPBACK)
    assert engine_env(ServeOptions("m", host=host, engine="sglang"), environ, cpu=True) == {}
    assert engine_env(ServeOptions("m", host=host), environ, cpu=False) == {}


def test_on_a_cpu_the_settings_are_applied_and_the_users_values_stay(cpu_vllm):
    environ = {"VLLM_CPU_KVCACHE_SPACE": "8"}
    added = apply_cpu_settings(environ)
    assert added == {"VLLM_TARGET_DEVICE": "cpu", "VLLM_HOST_IP": "127.0.0.1"}
    assert environ == {**added, "VLLM_CPU_KVCACHE_SPACE": "8"}
    assert apply_cpu_settings(environ) == {}  # a second judge adds nothing more


def test_nothing_is_set_on_a_gpu_or_without_vllm(monkeypatch, cpu_vllm):
    monkeypatch.setattr(vllm_cpu, "cpu_only", lambda: False)
    environ: dict[str, str] = {}
    assert apply_cpu_settings(environ) == {} and environ == {}
    monkeypatch.setattr(vllm_cpu, "cpu_only", lambda: True)
    monkeypatch.setattr(vllm_cpu, "util", types.SimpleNamespace(find_spec=lambda name: None))
    assert apply_cpu_settings(environ) == {} and environ == {}


def test_the_engine_starts_with_the_cpu_settings_in_its_environment(monkeypatch, cpu_vllm):
    """VLLMJudge puts the settings in place before it imports vLLM, so its engine core (a child
    process, which inherits the environment) starts with them."""
    import os

    from vlmjudge.backends.vllm import VLLMJudge

    seen = {}

    class Started(Exception):
        pass

    def engine(**kwargs):
        seen.update({name: os.environ.get(name) for name in VARIABLES})
        raise Started

    fake = types.ModuleType("vllm")
    fake.LLM = engine
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "6")
    with pytest.raises(Started):
        VLLMJudge("some/model")
    assert seen == {"VLLM_TARGET_DEVICE": "cpu", "VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "6"}
