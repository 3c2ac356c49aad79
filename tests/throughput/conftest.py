"""Tiny random Qwen3-VL and LLaVA checkpoints (built once per session, loaded from a folder)
and small noise images, for the shared-prefix and throughput tests."""
import numpy as np
import pytest
from PIL import Image

from vlmjudge.backends.transformers import TransformersJudge
from vlmjudge.testing import build_tiny_vlm


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """{family: (model, processor)} loaded once through the backend's own loading code."""
    root = tmp_path_factory.mktemp("tput_models")
    out = {}
    for family in ("qwen3_vl", "llava"):
        judge = TransformersJudge(build_tiny_vlm(root / family, family=family))
        out[family] = (judge.model, judge.processor)
    return out


@pytest.fixture
def judge_for(tiny_models):
    """A fresh judge (zeroed stats) on an already loaded tiny model."""
    def make(family, **kwargs):
        model, processor = tiny_models[family]
        return TransformersJudge(model, processor, **kwargs)
    return make


@pytest.fixture
def noise():
    """n random RGB images of varied sizes (so prefixes differ in length)."""
    def make(n, sizes=((32, 32), (64, 48), (48, 80), (40, 56)), seed=0):
        rng = np.random.default_rng(seed)
        return [Image.fromarray(rng.integers(0, 256, (sizes[i % len(sizes)][1], sizes[i % len(sizes)][0], 3),
                                             dtype=np.uint8)) for i in range(n)]
    return make
