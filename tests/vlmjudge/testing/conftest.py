"""Tiny random checkpoints of every supported judge family, built once per session.

`VLMJUDGE_FAMILY_CHECKPOINTS=DIR` runs the suite on checkpoints built elsewhere instead
(DIR/<family>/ for each family present there, e.g. by another recipe), so the conformance
can be checked on checkpoints this project did not build.
"""
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.testing.tiny_families import WINDOWED, build_tiny_family

#: A window shorter than the suite's long prompts (which run 60-200 tokens).
WINDOW = 12


@pytest.fixture(scope="session")
def window():
    return WINDOW


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory):
    """family -> folder of its tiny checkpoint (built on first use)."""
    built: dict[str, str] = {}
    external = os.environ.get("VLMJUDGE_FAMILY_CHECKPOINTS")
    root = tmp_path_factory.mktemp("families")

    def get(family: str) -> str:
        if family not in built:
            if external:
                path = Path(external) / family
                if not path.is_dir():
                    pytest.skip(f"no {family} checkpoint in VLMJUDGE_FAMILY_CHECKPOINTS")
                built[family] = str(path)
            else:
                window = {WINDOWED[family]: WINDOW} if family in WINDOWED else {}
                built[family] = build_tiny_family(family, root / family, **window)
        return built[family]
    return get


@pytest.fixture(scope="session")
def judges(checkpoint):
    """family -> (shared-prefix judge, unshared judge) on one loaded model."""
    loaded: dict[str, tuple] = {}

    def get(family: str):
        if family not in loaded:
            shared = TransformersJudge(checkpoint(family), batch_size=8)
            unshared = TransformersJudge(shared.model, shared.processor, batch_size=8, prefix_reuse=False)
            loaded[family] = (shared, unshared)
        return loaded[family]
    return get


@pytest.fixture(scope="session")
def images():
    """Random RGB images of different sizes and aspect ratios (so tile counts differ)."""
    rng = np.random.default_rng(7)
    sizes = [(32, 32), (64, 48), (48, 80), (40, 56), (96, 32)]
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]
