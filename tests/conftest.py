"""Suite-wide settings: offline, and a throwaway HF home so module caches never leak."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import shutil

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


@pytest.fixture(scope="session")
def chromium_path():
    """Debian's headless chromium for Playwright; skip where absent, but fail under CI=true."""
    for path in CHROMIUM_CANDIDATES:
        if shutil.which(path):
            return path
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is required for browser tests under CI=true (apt-get install chromium)")
    pytest.skip("chromium not installed: browser tests skipped (apt-get install chromium)")
