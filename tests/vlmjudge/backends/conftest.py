"""Fixtures of the backend tests. Transformers: tiny random Qwen3-VL and LLaVA checkpoints,
built once per session and installed in a temporary Hub cache, loaded by Hub id and revision
exactly as a user's model would be. vLLM: its suite runs only in the second environment
(tests/vlmjudge/backends/make_vllm_env.sh); elsewhere it skips with the reason, except under
CI=true, where a missing vllm fails unless VLMJUDGE_VLLM_ENV=absent says this job is not the vLLM
one. One engine per session; its caches go to a throwaway folder."""
import os
import tempfile

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


# vLLM
_ENGINE_HOME = tempfile.mkdtemp(prefix="vlmjudge-vllm-")
for _name, _value in {"VLLM_TARGET_DEVICE": "cpu", "VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "1",
                      "VLLM_CACHE_ROOT": os.path.join(_ENGINE_HOME, "vllm"),
                      "TORCHINDUCTOR_CACHE_DIR": os.path.join(_ENGINE_HOME, "inductor"),
                      "TMPDIR": os.path.join(_ENGINE_HOME, "tmp"), "VLLM_NO_USAGE_STATS": "1"}.items():
    os.environ.setdefault(_name, _value)
os.makedirs(os.environ["TMPDIR"], exist_ok=True)


def require_vllm():
    """Skip (or, in the CI job meant to run it, fail) where vllm does not import."""
    try:
        from vllm import LLM  # noqa: F401  (a bare `import vllm` could find a namespace folder)
    except ImportError as exc:
        if os.environ.get("CI") == "true" and os.environ.get("VLMJUDGE_VLLM_ENV") != "absent":
            pytest.fail(f"vllm does not import under CI=true ({exc}); build the environment with "
                        "tests/vlmjudge/backends/make_vllm_env.sh, or set VLMJUDGE_VLLM_ENV=absent in jobs without it")
        pytest.skip(f"vllm is not installed ({exc}): the vLLM tests run in the second environment "
                    "(bash tests/vlmjudge/backends/make_vllm_env.sh VENV_DIR)")


@pytest.fixture(scope="session")
def vllm_checkpoint(tmp_path_factory):
    """A tiny Qwen3-VL whose head size vLLM's CPU attention runs, with a lean to "Yes" so that
    decisions are mixed."""
    require_vllm()
    from vlmjudge.testing.tiny_vlm import build_tiny_vlm
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "qwen3vl-vllm", vllm=True, yes_bias=2.0)


@pytest.fixture(scope="session")
def vllm_judge(vllm_checkpoint):
    """The one engine of the session (in process; the engine core is vLLM's own child process)."""
    from vlmjudge.judge import load_judge
    # block_size 32 (the CPU attention's smallest): its default, 128, is longer than these prompts,
    # so nothing would be cached
    judge = load_judge(vllm_checkpoint, backend="vllm", dtype="float32", skip_mm_profiling=True, block_size=32)
    yield judge
    judge.close()


@pytest.fixture(scope="session")
def hf_judge(vllm_checkpoint):
    """The same checkpoint on the transformers backend, fp32 on CPU."""
    from vlmjudge.judge import load_judge
    return load_judge(vllm_checkpoint, backend="transformers", dtype="float32", device="cpu")


@pytest.fixture(scope="session")
def images():
    """Seeded noise in three sizes and two flat colours."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(11)
    noise = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in ((40, 48), (64, 64), (48, 80))]
    return noise + [Image.new("RGB", (64, 48), (200, 30, 30)), Image.new("RGB", (48, 48), (20, 40, 220))]


@pytest.fixture(scope="session")
def media_root(tmp_path_factory):
    """The folder the session's server may read images from (`vlmjudge serve --media-root`)."""
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def vllm_server(vllm_checkpoint, media_root, tmp_path_factory):
    """The session's one vLLM OpenAI server, started through the launcher under test
    (`python -m vlmjudge.serve`, which becomes the engine) on a free loopback port; its /v1 URL."""
    import sys
    from vlmjudge.testing.processes import free_port, running_server
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    args = [sys.executable, "-m", "vlmjudge.serve", "--model", vllm_checkpoint, "--served-model-name", "tiny",
            "--port", str(port), "--dtype", "float32", "--media-root", str(media_root),
            "--", "--max-model-len", "4096", "--skip-mm-profiling"]
    url = f"http://127.0.0.1:{port}/v1"
    # the launcher exec'd the engine: the process stopped at the end is the engine's own
    with running_server(args, f"{url}/models", log, timeout_s=900, poll_s=2):
        yield url


@pytest.fixture(scope="session")
def server_judge(vllm_server):
    """An openai judge on the session's vLLM server (`vllm_server`, started by `vlmjudge serve`)."""
    from vlmjudge.judge import load_judge
    os.environ.setdefault("VLMJUDGE_TEST_KEY", "EMPTY")
    return load_judge("tiny", backend="openai", base_url=vllm_server, api_key_env="VLMJUDGE_TEST_KEY", concurrency=4)
