"""Suite-wide settings: offline, and a throwaway HF home so module caches never leak."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tiny models gain nothing from threads; on 2 shared cores OpenMP spin-waiting made them ~10x slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The checkpoint-digest memo (vlmjudge.backends._hf_identity) goes to a throwaway folder, not ~/.cache.
os.environ.setdefault("VLMJUDGE_HOME", __import__("tempfile").mkdtemp(prefix="vlmjudge-home-"))

import shutil

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def pytest_configure(config):
    """Also for a torch imported before this file (plugins): one intra-op thread."""
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
