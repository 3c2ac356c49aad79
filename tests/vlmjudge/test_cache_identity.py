"""The response cache knows a local checkpoint by its content, not its path (issue: stale answers).

A fine-tuned judge saved over the old one in the same folder must be asked again; a copy of the same
checkpoint in another folder (another node) must resume from the same cache without model calls.
"""
import shutil
import time

from PIL import Image

from vlmjudge import Request, load_judge
from vlmjudge.backends.hf import identity
from vlmjudge.testing import build_tiny_vlm

OPTIONS = ["Yes", "No"]


def requests():
    return [Request(images=[Image.new("RGB", (32, 32), colour)], text="Is there a cat?")
            for colour in ("red", "green", "blue")]


def probs(model_dir, cache):
    judge = load_judge(str(model_dir), device="cpu", cache=str(cache))
    return judge, judge.choice_probs(requests(), OPTIONS)


def test_weights_replaced_in_place_are_asked_again(tmp_path):
    folder, cache = tmp_path / "judge", tmp_path / "responses.sqlite"
    build_tiny_vlm(folder, seed=0)
    first, old = probs(folder, cache)
    assert first.stats.model_calls == 3

    build_tiny_vlm(folder, seed=1)  # a new model saved over the old one, same path
    second, new = probs(folder, cache)
    assert second.stats.model_calls == 3 and second.stats.cache_hits == 0
    assert second.manifest()["checkpoint"] != first.manifest()["checkpoint"]
    fresh = load_judge(str(folder), device="cpu").choice_probs(requests(), OPTIONS)  # no cache at all
    assert new == fresh and new != old


def test_a_copied_checkpoint_resumes_from_the_same_cache(tmp_path):
    folder, cache = tmp_path / "judge", tmp_path / "responses.sqlite"
    build_tiny_vlm(folder, seed=0)
    _, first = probs(folder, cache)
    copy = tmp_path / "elsewhere" / "judge-copy"
    shutil.copytree(folder, copy)
    judge, again = probs(copy, cache)
    assert judge.stats.model_calls == 0 and judge.stats.cache_hits == 3 and again == first
    manifest = judge.manifest()
    assert manifest["checkpoint"].startswith("sha256:") and manifest["model"] == str(copy)


def test_digests_are_reused_while_size_and_mtime_hold(tmp_path, monkeypatch):
    folder = tmp_path / "judge"
    build_tiny_vlm(folder, seed=0)
    monkeypatch.setenv("VLMJUDGE_HOME", str(tmp_path / "home"))
    first = identity.folder_digest(folder)
    hashed = []
    original = identity.hashlib.sha256
    monkeypatch.setattr(identity.hashlib, "sha256", lambda *a: hashed.append(a) or original(*a))
    assert identity.folder_digest(folder) == first
    assert len(hashed) == 1  # only the listing digest: every file digest came from the memo
    weights = next(folder.glob("*.safetensors"))
    time.sleep(0.01)
    weights.write_bytes(weights.read_bytes())  # same content, new mtime: re-hashed, same digest
    hashed.clear()
    assert identity.folder_digest(folder) == first and len(hashed) == 2
