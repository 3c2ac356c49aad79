"""Session fixtures: tiny random CLIP and DINOv2 checkpoints and a similarity scorer over them."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def encoder_dirs(tmp_path_factory) -> dict[str, str]:
    from vlmjudge.testing.tiny_encoders import build_tiny_clip, build_tiny_dinov2

    root = tmp_path_factory.mktemp("regen_encoders")
    return {"clip": build_tiny_clip(root / "clip"), "dino": build_tiny_dinov2(root / "dino")}


@pytest.fixture(scope="session")
def scorer(encoder_dirs):
    from regeneration.similarity import SimilarityScorer

    return SimilarityScorer(encoder_dirs["clip"], encoder_dirs["dino"], device="cpu")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a shared 2-core machine two threads
    spin against other processes (measured: 28 s vs 3.6 s for one constrained stage). Restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
