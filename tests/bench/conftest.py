"""Tiny random Qwen3-VL and LLaVA checkpoints (the suite's shared builds, loaded from a folder)
for the shared-prefix and throughput tests, and those models shifted for TerraVis runs; `noise`
images come from tests/conftest.py."""
import pytest

from bench import LogitShift, bench_images, option_token_ids, shift_for_rate
from bench.terravis_setup import detection_margins, make_all_eligible
from vlmjudge.backends.hf.judge import TransformersJudge


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


@pytest.fixture(scope="module")
def shifted(tiny_models):
    """The tiny Qwen3-VL with every image eligible and about 30% of its checks positive, for the
    TerraVis tests of one module (the hooks come off when it ends)."""
    model, processor = tiny_models["qwen3_vl"]
    images = bench_images(3, 64, seed=5)
    hooks = [make_all_eligible(model, processor)]
    yes = LogitShift(model, option_token_ids(processor.tokenizer, "Yes"))
    yes.shift = shift_for_rate(detection_margins(model, processor, images), 0.3)
    hooks.append(yes)
    yield model, processor, images
    for hook in hooks:
        hook.remove()
