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
def tiny_qwen(tmp_path_factory):
    """A tiny random Qwen3-VL judge on CPU (transformers backend, xgrammar constraints)."""
    pytest.importorskip("xgrammar")
    from vlmjudge.judge import load_judge
    from vlmjudge.testing.tiny_vlm import build_tiny_vlm
    path = build_tiny_vlm(tmp_path_factory.mktemp("vs2j") / "qwen3vl", family="qwen3_vl")
    return load_judge(path, backend="transformers", device="cpu", batch_size=35)
