"""Session fixtures: the suite's tiny random CLIP and DINOv2 checkpoints (tests/conftest.py) and a
similarity scorer over them."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def encoder_dirs(tiny_encoder_dirs) -> dict[str, str]:
    """{"clip": folder, "dino": folder}, the name these tests use for the shared pair."""
    return tiny_encoder_dirs


@pytest.fixture(scope="session")
def scorer(encoder_dirs):
    from regeneration.similarity import SimilarityScorer

    return SimilarityScorer(encoder_dirs["clip"], encoder_dirs["dino"], device="cpu")

