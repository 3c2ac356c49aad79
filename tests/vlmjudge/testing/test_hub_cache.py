"""install_in_hf_cache writes the cache layout huggingface_hub reads, so tiny checkpoints load by Hub id offline."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from huggingface_hub import constants, hf_hub_download, scan_cache_dir, try_to_load_from_cache
from transformers import AutoModel, AutoProcessor

from vlmjudge.testing.hub_cache import blob_etag, install_in_hf_cache
from vlmjudge.testing.tiny_encoders import build_tiny_clip

REPO = "tiny-org/tiny-clip"


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    return Path(build_tiny_clip(tmp_path_factory.mktemp("src") / "clip"))


@pytest.fixture
def installed(clip_dir, tmp_path):
    cache = tmp_path / "hub"
    commit = install_in_hf_cache(clip_dir, REPO, cache_dir=cache)
    return cache, commit


def storage(cache: Path) -> Path:
    return cache / "models--tiny-org--tiny-clip"


def test_layout(installed, clip_dir):
    cache, commit = installed
    assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)
    repo = storage(cache)
    assert (repo / "refs" / "main").read_text() == commit  # no trailing newline, as huggingface_hub writes
    snapshot = repo / "snapshots" / commit
    names = sorted(p.name for p in clip_dir.iterdir())
    assert sorted(p.name for p in snapshot.iterdir()) == names
    for name in names:
        pointer = snapshot / name
        assert pointer.is_symlink()
        target = os.readlink(pointer)
        assert target.startswith("../../blobs/")
        assert pointer.read_bytes() == (clip_dir / name).read_bytes()


def test_blob_names_follow_the_hub(installed, clip_dir):
    cache, _ = installed
    config = (clip_dir / "config.json").read_bytes()
    git_sha1 = hashlib.sha1(b"blob %d\0" % len(config) + config).hexdigest()  # what `git hash-object` prints
    weights_sha256 = hashlib.sha256((clip_dir / "model.safetensors").read_bytes()).hexdigest()
    assert blob_etag(clip_dir / "config.json") == git_sha1
    assert blob_etag(clip_dir / "model.safetensors") == weights_sha256
    blobs = {p.name for p in (storage(cache) / "blobs").iterdir()}
    assert {git_sha1, weights_sha256} <= blobs


def test_huggingface_hub_reads_it(installed):
    cache, commit = installed
    info = scan_cache_dir(cache)
    assert not info.warnings
    (repo,) = info.repos
    assert repo.repo_id == REPO and repo.repo_type == "model"
    (rev,) = repo.revisions
    assert rev.commit_hash == commit and rev.refs == frozenset({"main"}) and rev.nb_files == 5
    for revision in ("main", commit):
        cached = try_to_load_from_cache(REPO, "config.json", cache_dir=cache, revision=revision)
        assert cached == str(storage(cache) / "snapshots" / commit / "config.json")
        path = hf_hub_download(REPO, "config.json", cache_dir=cache, revision=revision, local_files_only=True)
        assert Path(path).read_bytes() == Path(cached).read_bytes()


def test_transformers_loads_by_id_and_revision(installed, clip_dir):
    cache, commit = installed
    reference = AutoModel.from_pretrained(clip_dir)
    for revision in ("main", commit):
        model = AutoModel.from_pretrained(REPO, revision=revision, cache_dir=cache, local_files_only=True)
        processor = AutoProcessor.from_pretrained(REPO, revision=revision, cache_dir=cache, local_files_only=True)
        assert type(processor).__name__ == "CLIPProcessor"
        for name, tensor in reference.state_dict().items():
            assert torch.equal(model.state_dict()[name], tensor), name


def test_child_process_finds_it_with_env_only(installed):
    """The env-var route: a fresh interpreter reads HF_HUB_CACHE / HF_HUB_OFFLINE at import, no cache_dir.

    Only huggingface_hub is imported there (transformers' from_pretrained resolves every file through
    the same hf_hub_download, tested in-process above), which keeps this test to about a second.
    """
    cache, commit = installed
    script = textwrap.dedent(
        f"""
        from huggingface_hub import constants, hf_hub_download, snapshot_download
        assert constants.HF_HUB_OFFLINE
        for revision in ("main", "{commit}"):
            config = hf_hub_download("{REPO}", "config.json", revision=revision)
            folder = snapshot_download("{REPO}", revision=revision)
            print(revision, config.startswith(folder), folder)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_"))}
    env.update(HF_HOME=str(cache.parent / "home"), HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    snapshot = str(storage(cache) / "snapshots" / commit)
    assert out.stdout.splitlines() == [f"main True {snapshot}", f"{commit} True {snapshot}"]


def test_default_cache_is_where_this_process_loads_from(monkeypatch, clip_dir, tmp_path):
    """The in-process route: point huggingface_hub's own constants at a tmp cache and go offline."""
    cache = tmp_path / "default-hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    commit = install_in_hf_cache(clip_dir, REPO)
    assert (storage(cache) / "snapshots" / commit / "config.json").is_file()
    for revision in ("main", commit):
        model = AutoModel.from_pretrained(REPO, revision=revision)
        processor = AutoProcessor.from_pretrained(REPO, revision=revision)
        assert type(model).__name__ == "CLIPModel" and type(processor).__name__ == "CLIPProcessor"


def test_commit_derives_from_content(clip_dir, tmp_path):
    first = install_in_hf_cache(clip_dir, REPO, cache_dir=tmp_path / "a")
    assert install_in_hf_cache(clip_dir, REPO, cache_dir=tmp_path / "b") == first
    assert install_in_hf_cache(clip_dir, REPO, cache_dir=tmp_path / "a") == first  # reinstall is idempotent
    changed = tmp_path / "changed"
    shutil.copytree(clip_dir, changed)
    (changed / "config.json").write_text((clip_dir / "config.json").read_text() + " ")
    second = install_in_hf_cache(changed, REPO, cache_dir=tmp_path / "a")
    assert second != first
    repo = storage(tmp_path / "a")
    assert (repo / "refs" / "main").read_text() == second  # main moved, the old snapshot stays
    assert {p.name for p in (repo / "snapshots").iterdir()} == {first, second}
    # the unchanged weights are stored once
    assert len(list((repo / "blobs").iterdir())) == len(list(clip_dir.iterdir())) + 1


def test_named_ref_and_explicit_commit(clip_dir, tmp_path):
    cache = tmp_path / "hub"
    commit = install_in_hf_cache(clip_dir, REPO, cache_dir=cache, revision="v1.0")
    repo = storage(cache)
    assert (repo / "refs" / "v1.0").read_text() == commit and not (repo / "refs" / "main").exists()
    assert try_to_load_from_cache(REPO, "config.json", cache_dir=cache, revision="v1.0")
    chosen = "0123456789abcdef0123456789abcdef01234567"
    assert install_in_hf_cache(clip_dir, REPO, cache_dir=cache, revision=chosen) == chosen
    assert (repo / "refs" / "main").read_text() == chosen
    model = AutoModel.from_pretrained(REPO, revision=chosen, cache_dir=cache, local_files_only=True)
    assert type(model).__name__ == "CLIPModel"


def test_nested_files_and_dataset_repos(tmp_path):
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "top.json").write_text("{}")
    (src / "sub" / "deeper" / "x.txt").write_text("hello")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ignored")
    cache = tmp_path / "hub"
    commit = install_in_hf_cache(src, "someone/data", cache_dir=cache, repo_type="dataset")
    pointer = cache / "datasets--someone--data" / "snapshots" / commit / "sub" / "deeper" / "x.txt"
    assert os.readlink(pointer).startswith("../../../../blobs/") and pointer.read_text() == "hello"
    assert not (pointer.parents[2] / ".git").exists()
    path = hf_hub_download(
        "someone/data", "sub/deeper/x.txt", repo_type="dataset", cache_dir=cache, local_files_only=True
    )
    assert Path(path).read_text() == "hello"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repo_id": "a/b/c"}, "repo id"),
        ({"repo_id": "org--x/y"}, "repo id"),
        ({"repo_id": "org/../x"}, "repo id"),
        ({"revision": "../escape"}, "revision"),
        ({"repo_type": "kernel"}, "repo_type"),
    ],
)
def test_bad_arguments(clip_dir, tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        install_in_hf_cache(clip_dir, cache_dir=tmp_path, **kwargs)


def test_bad_source(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        install_in_hf_cache(tmp_path / "missing", cache_dir=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no files"):
        install_in_hf_cache(tmp_path / "empty", cache_dir=tmp_path)
