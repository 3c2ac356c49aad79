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


@pytest.fixture
def one_thread():
    """Run torch on one thread: a 0.2 M-parameter model gains nothing from more, and on a busy
    2-core machine thread contention makes each decoding step ~20x slower."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_qwen_path(tmp_path_factory):
    """A tiny random Qwen3-VL checkpoint, written once per session."""
    pytest.importorskip("xgrammar")
    from vlmjudge.testing.tiny_vlm import build_tiny_vlm
    return build_tiny_vlm(tmp_path_factory.mktemp("vs2j") / "qwen3vl", family="qwen3_vl")


@pytest.fixture(scope="session")
def tiny_qwen(tiny_qwen_path):
    """The tiny Qwen3-VL as a judge on CPU (transformers backend, xgrammar constraints)."""
    from vlmjudge.judge import load_judge
    return load_judge(tiny_qwen_path, backend="transformers", device="cpu", batch_size=70)
