"""Suite-wide settings (offline, a throwaway HF home so module caches never leak, one torch thread)
and the fixtures several folders share: tiny checkpoints built once per session, noise images."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tiny models gain nothing from threads; on 2 shared cores OpenMP spin-waiting made them ~10x slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The checkpoint-digest memo (vlmjudge.backends.hf.identity) goes to a throwaway folder, not ~/.cache.
os.environ.setdefault("VLMJUDGE_HOME", __import__("tempfile").mkdtemp(prefix="vlmjudge-home-"))

import shutil

import numpy as np
import pytest
from PIL import Image

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def pytest_configure(config):
    """Also for a torch imported before this file (plugins): one intra-op thread, for the whole
    session (no library code changes it, so test folders need no thread fixtures of their own)."""
    import torch
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def chromium_path():
    """Debian's headless chromium for Playwright; skip where absent, but fail under CI=true."""
    for path in CHROMIUM_CANDIDATES:
        if shutil.which(path):
            return path
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is required for browser tests under CI=true (apt-get install chromium)")
    pytest.skip("chromium not installed: browser tests skipped (apt-get install chromium)")


@pytest.fixture(scope="session")
def tiny_vlm_path(tmp_path_factory):
    """`tiny_vlm_path(family="qwen3_vl", yes_bias=0.0)`: the folder of a tiny random checkpoint,
    built on first use and shared by every test of the session that asks for the same one.
    Tests must not write into it; one that needs a private or unusual model builds its own."""
    from vlmjudge.testing import build_tiny_vlm

    built = {}

    def path(family="qwen3_vl", yes_bias=0.0):
        key = (family, float(yes_bias))
        if key not in built:
            root = tmp_path_factory.mktemp(f"tiny_{family}_bias{key[1]:g}")
            built[key] = str(build_tiny_vlm(root / family, family=family, yes_bias=yes_bias))
        return built[key]
    return path


@pytest.fixture(scope="session")
def tiny_encoder_dirs(tmp_path_factory):
    """{"clip": folder, "dino": folder}: tiny random CLIP and DINOv2 checkpoints, built once."""
    from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2

    root = tmp_path_factory.mktemp("tiny_encoders")
    return {"clip": str(build_tiny_clip(root / "clip")), "dino": str(build_tiny_dinov2(root / "dino"))}


@pytest.fixture
def noise():
    """`noise(n, sizes=..., seed=0)`: n random RGB images cycling through different sizes (so
    token counts and prefixes differ in length)."""
    def make(n, sizes=((32, 32), (64, 48), (48, 80), (40, 56)), seed=0):
        rng = np.random.default_rng(seed)
        return [Image.fromarray(rng.integers(0, 256, (sizes[i % len(sizes)][1], sizes[i % len(sizes)][0], 3),
                                             dtype=np.uint8)) for i in range(n)]
    return make
