"""Tiny random Qwen3-VL and LLaVA checkpoints, built once per session and installed in a
temporary Hub cache, loaded by Hub id and revision exactly as a user's model would be."""
import pytest

from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.testing import install_in_hf_cache

REPOS = {"qwen3_vl": "org/tiny-qwen3-vl", "llava": "org/tiny-llava"}


@pytest.fixture(scope="session")
def hub(tmp_path_factory, tiny_vlm_path):
    """{family: (repo_id, commit)} and the cache folder holding both checkpoints."""
    cache = tmp_path_factory.mktemp("hf_cache")
    commits = {}
    for family, repo in REPOS.items():
        src = tiny_vlm_path(family)  # yes_bias 0: about half Yes
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

