"""Shared fixtures for the VIEScore2 judge tests: scripted answers, images, and one tiny
random Qwen3-VL built offline once per session."""
import numpy as np
import pytest
from PIL import Image


@pytest.fixture(scope="session")
def noise_images():
    """Ten random RGB images (two sizes), fixed by seed."""
    rng = np.random.default_rng(7)
    return [Image.fromarray(rng.integers(0, 256, ((48, 64) if i % 2 else (64, 48)) + (3,), dtype=np.uint8))
            for i in range(10)]


@pytest.fixture(scope="session")
def tiny_qwen_path(tiny_vlm_path):
    """The suite's tiny random Qwen3-VL checkpoint (yes_bias 0)."""
    pytest.importorskip("xgrammar")
    return tiny_vlm_path("qwen3_vl")


@pytest.fixture(scope="session")
def tiny_qwen(tiny_qwen_path):
    """The tiny Qwen3-VL as a judge on CPU (transformers backend, xgrammar constraints)."""
    from vlmjudge.judge import load_judge
    return load_judge(tiny_qwen_path, backend="transformers", device="cpu", batch_size=70)
