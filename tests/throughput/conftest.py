"""Tiny random Qwen3-VL and LLaVA checkpoints (the suite's shared builds, loaded from a folder)
for the shared-prefix and throughput tests; `noise` images come from tests/conftest.py."""
import pytest

from vlmjudge.backends.transformers import TransformersJudge


@pytest.fixture(scope="session")
def tiny_models(tiny_vlm_path):
    """{family: (model, processor)} loaded once through the backend's own loading code."""
    out = {}
    for family in ("qwen3_vl", "llava"):
        judge = TransformersJudge(tiny_vlm_path(family))
        out[family] = (judge.model, judge.processor)
    return out


@pytest.fixture
def judge_for(tiny_models):
    """A fresh judge (zeroed stats) on an already loaded tiny model."""
    def make(family, **kwargs):
        model, processor = tiny_models[family]
        return TransformersJudge(model, processor, **kwargs)
    return make
