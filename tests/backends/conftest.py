"""Tiny random Qwen3-VL and LLaVA checkpoints, built once per session and installed in a
temporary Hub cache, loaded by Hub id and revision exactly as a user's model would be."""
import numpy as np
import pytest
from PIL import Image

from vlmjudge.backends.transformers import TransformersJudge
from vlmjudge.testing import build_tiny_vlm, install_in_hf_cache

REPOS = {"qwen3_vl": "org/tiny-qwen3-vl", "llava": "org/tiny-llava"}


@pytest.fixture(scope="session")
def hub(tmp_path_factory):
    """{family: (repo_id, commit)} and the cache folder holding both checkpoints."""
    cache = tmp_path_factory.mktemp("hf_cache")
    built = tmp_path_factory.mktemp("built")
    commits = {}
    for family, repo in REPOS.items():
        src = build_tiny_vlm(built / family, family=family)  # yes_bias 0: about half Yes
        commits[family] = (repo, install_in_hf_cache(src, repo, cache_dir=cache))
    return cache, commits


@pytest.fixture(scope="session")
def loaded(hub):
    """One judge per family, loaded by Hub id at the installed commit."""
    cache, commits = hub
    return {family: TransformersJudge(repo, revision=commit, hf_cache_dir=str(cache), batch_size=4)
            for family, (repo, commit) in commits.items()}


@pytest.fixture
def fresh():
    """Make a judge on an already loaded model and processor, with zeroed stats (no reload)."""
    def make(judge, batch_size=4):
        return TransformersJudge(judge.model, judge.processor, batch_size=batch_size)
    return make


@pytest.fixture
def noise():
    """Make n random RGB images cycling through different sizes (so token counts differ)."""
    def make(n, sizes=((32, 32), (64, 48), (48, 80), (40, 56)), seed=0):
        rng = np.random.default_rng(seed)
        return [Image.fromarray(rng.integers(0, 256, (sizes[i % len(sizes)][1], sizes[i % len(sizes)][0], 3),
                                             dtype=np.uint8)) for i in range(n)]
    return make
