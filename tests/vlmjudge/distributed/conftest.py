"""Session fixtures of the scale-out tests: one tiny Qwen3-VL, the images, and the
single-process reference records every multi-process and Ray run must reproduce."""
import pytest
from dist_support import JUDGE_KWARGS, N_IMAGES, N_RAY, PACK, TOY, write_images

from vlmjudge.distributed import score_records
from vlmjudge.judge import load_judge


@pytest.fixture(scope="session")
def tiny_vlm(tiny_vlm_path):
    """The suite's shared tiny random Qwen3-VL folder (yes_bias 0, seed 0; PACK is tuned to it)."""
    return tiny_vlm_path("qwen3_vl")


@pytest.fixture(scope="session")
def image_paths(tmp_path_factory):
    return write_images(tmp_path_factory.mktemp("dist_images"), N_RAY)


@pytest.fixture(scope="session")
def cached_judge(tiny_vlm, tmp_path_factory):
    """The in-process judge, with a response cache: the reference runs fill it, so the
    single-process faces (evaluate, torchmetrics) replay exactly those answers for free."""
    cache = tmp_path_factory.mktemp("dist_cache") / "responses.sqlite"
    return load_judge(tiny_vlm, backend="transformers", cache=str(cache), **JUDGE_KWARGS)


@pytest.fixture(scope="session")
def reference(cached_judge, image_paths):
    """Single-process TerraVis records of all images (ids "0".."19"), the model calls the first
    N_IMAGES took and all took, and the toy method's records of the first N_IMAGES."""
    before = cached_judge.stats.model_calls
    first = score_records("terravis", {"image": image_paths[:N_IMAGES]}, judge=cached_judge,
                          method_config={"pack": PACK})
    calls = cached_judge.stats.model_calls - before
    rest = score_records("terravis", {"image": image_paths[N_IMAGES:],
                                      "id": [str(i) for i in range(N_IMAGES, len(image_paths))]},
                         judge=cached_judge, method_config={"pack": PACK})
    all_calls = cached_judge.stats.model_calls - before
    toy = score_records(TOY, {"image": image_paths[:N_IMAGES]}, judge=cached_judge)
    return {"terravis": first + rest, "terravis_calls": calls, "terravis_calls_all": all_calls, "toy": toy}
