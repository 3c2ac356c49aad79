"""Session fixtures: a tiny random Qwen3-VL biased to "Yes", and CLIP/DINOv2 encoders."""
from __future__ import annotations

import pytest

pytest.importorskip("xgrammar")


@pytest.fixture(scope="session")
def vlm_dir(tiny_vlm_path) -> str:
    """Biased towards " Yes", so TerraVis finds images eligible and its short-pack answers are mixed."""
    return tiny_vlm_path(yes_bias=8.0)


@pytest.fixture(scope="session")
def encoders(tiny_encoder_dirs) -> dict[str, str]:
    """{"clip": folder, "dino": folder}, the name these tests use for the shared pair."""
    return tiny_encoder_dirs


@pytest.fixture
def judge_kwargs(vlm_dir, tmp_path) -> dict:
    """load_judge arguments for the biased tiny model, with a response cache of this test's own."""
    return {"model": vlm_dir, "backend": "transformers", "device": "cpu", "batch_size": 18,
            "cache": str(tmp_path / "responses.sqlite")}


@pytest.fixture(autouse=True)
def fresh_judges():
    """No judge kept between tests."""
    from vlmjudge.integrations import release_judges

    yield
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
