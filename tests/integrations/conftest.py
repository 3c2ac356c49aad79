"""Session fixtures: tiny random Qwen3-VLs (one biased to "Yes", one neutral) and CLIP/DINOv2 encoders."""
from __future__ import annotations

import pytest

pytest.importorskip("xgrammar")


@pytest.fixture(scope="session")
def vlm_dir(tmp_path_factory) -> str:
    """Biased towards " Yes", so TerraVis finds images eligible and its short-pack answers are mixed."""
    from vlmjudge.testing import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("integ_vlm") / "qwen3_vl", yes_bias=8.0)


@pytest.fixture(scope="session")
def neutral_vlm_dir(tmp_path_factory) -> str:
    """No bias: TerraVis's default pack finds every image N/A after the eligibility stage (cheap)."""
    from vlmjudge.testing import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("integ_vlm0") / "qwen3_vl")


@pytest.fixture(scope="session")
def encoders(tmp_path_factory) -> dict[str, str]:
    from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2

    root = tmp_path_factory.mktemp("integ_encoders")
    return {"clip": build_tiny_clip(root / "clip"), "dino": build_tiny_dinov2(root / "dino")}


@pytest.fixture
def judge_kwargs(vlm_dir, tmp_path) -> dict:
    """load_judge arguments for the biased tiny model, with a response cache of this test's own."""
    return {"model": vlm_dir, "backend": "transformers", "device": "cpu", "batch_size": 18,
            "cache": str(tmp_path / "responses.sqlite")}


@pytest.fixture(autouse=True)
def one_torch_thread_and_fresh_judges():
    """One intra-op thread (tiny models on a shared 2-core machine), and no judge kept between tests."""
    import torch

    from vlmjudge.integrations import release_judges

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
    release_judges()


@pytest.fixture
def toys():
    """The model-free toy methods of integ_toys, registered for one test."""
    from integ_toys import TOYS, Brightness

    from vlmjudge.registry import register, unregister

    for spec in TOYS:
        register(spec)
    Brightness.calls = 0
    yield
    for spec in TOYS:
        unregister(spec.name)
