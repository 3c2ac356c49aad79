"""The vision cache: an image asked about in several calls goes through the tower once,
with the same results as encoding it again; keyed by pixels, bounded, Qwen-VL only. Tests
that count the tower's runs across calls turn the prefix KV cache off (`kv_cache_mb=0`): a
prefix it serves skips the tower altogether (tests/vlmjudge/backends/test_prefix_kv_cache.py)."""
import pytest
import torch

from vlmjudge import Request
from vlmjudge.backends.hf.prefix import vision_cache
from vlmjudge.backends.hf.judge import TransformersJudge

OPTIONS = ["Yes", "No"]


def _questions(images, n=3):
    return [Request(images=[im], text=f"Question {k}: is there a cat? Answer Yes or No.")
            for im in images for k in range(n)]


def _texts(images):
    return [Request(images=[im], text=f"Describe thing {k}.") for im in images for k in range(2)]


def test_images_are_encoded_once_across_calls_with_the_same_results(loaded, noise):
    base = loaded["qwen3_vl"]
    images = noise(3)
    cached = TransformersJudge(base.model, base.processor, batch_size=2, kv_cache_mb=0)
    plain = TransformersJudge(base.model, base.processor, batch_size=2, vision_cache_mb=0, kv_cache_mb=0)
    assert cached.vision_cache.enabled and not plain.vision_cache.enabled
    for judge in (cached, plain):
        judge.probs = judge.choice_probs(_questions(images), OPTIONS)
        judge.texts = [a.text for a in judge.generate(_texts(images))]
    assert cached.stats.images_encoded == 3          # once per image, over both calls
    assert plain.stats.images_encoded == 6           # once per image per call
    assert cached.vision_cache.hits == 3 and len(cached.vision_cache) == 3
    assert cached.texts == plain.texts
    for a, b in zip(cached.probs, plain.probs):
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-5 for k in a)
    assert "get_image_features" not in vars(base.model.model)  # the override is gone after the forward


def test_the_key_is_the_pixels_not_the_object(loaded, noise):
    base = loaded["qwen3_vl"]
    image = noise(1)[0]
    judge = TransformersJudge(base.model, base.processor)
    first = judge.choice_probs(_questions([image], 1), OPTIONS)[0]
    image.paste((255, 0, 0), (0, 0, image.width, image.height))  # same object, new pixels
    second = judge.choice_probs(_questions([image], 1), OPTIONS)[0]
    reference = TransformersJudge(base.model, base.processor, vision_cache_mb=0).choice_probs(
        _questions([image], 1), OPTIONS)[0]
    assert judge.stats.images_encoded == 2
    assert abs(second["Yes"] - reference["Yes"]) < 1e-5 and abs(second["Yes"] - first["Yes"]) > 1e-6


def test_the_store_is_bounded_least_recently_used_first(loaded, noise):
    base = loaded["qwen3_vl"]
    images = noise(3, sizes=((64, 64),))
    probe = TransformersJudge(base.model, base.processor)
    probe.choice_probs(_questions(images[:1], 1), OPTIONS)
    one_image_mb = probe.vision_cache.bytes / 2**20
    judge = TransformersJudge(base.model, base.processor, vision_cache_mb=2.5 * one_image_mb, kv_cache_mb=0)
    judge.choice_probs(_questions(images, 1), OPTIONS)      # 3 encoded, the first evicted
    assert len(judge.vision_cache) == 2 and judge.vision_cache.bytes <= judge.vision_cache.max_bytes
    judge.choice_probs(_questions(images[1:], 1), OPTIONS)  # both kept: no encode
    assert judge.stats.images_encoded == 3
    judge.choice_probs(_questions(images[:1], 1), OPTIONS)  # evicted: encoded again
    assert judge.stats.images_encoded == 4
    with pytest.raises(ValueError, match=">= 0"):
        TransformersJudge(base.model, base.processor, vision_cache_mb=-1)


def test_the_same_image_twice_in_one_forward_is_encoded_once(loaded, noise):
    base = loaded["qwen3_vl"]
    image = noise(1)[0]
    twin = image.copy()  # another object with the same pixels: another unit, one encode
    judge = TransformersJudge(base.model, base.processor)
    probs = judge.choice_probs(_questions([image, twin], 1), OPTIONS)
    assert judge.stats.images_encoded == 1
    assert abs(probs[0]["Yes"] - probs[1]["Yes"]) < 1e-5


def test_the_override_is_removed_when_the_forward_fails(loaded, noise, monkeypatch):
    base = loaded["qwen3_vl"]
    judge = TransformersJudge(base.model, base.processor, prefetch=False)
    inner = base.model.model

    def broken(*args, **kwargs):
        raise RuntimeError("tower failed")

    monkeypatch.setattr(type(inner.visual), "forward", broken)
    with pytest.raises(RuntimeError, match="tower failed"):
        judge.choice_probs(_questions(noise(1), 1), OPTIONS)
    assert "get_image_features" not in vars(inner)
    assert len(judge.vision_cache) == 0


def test_llava_rows_are_served_and_the_unshared_path_encodes_per_call(loaded, noise):
    """LLaVA (one pixel array per image) is served by the store too (issue 20); the unshared
    path never is. Families with tiled inputs are covered in tests/vlmjudge/testing."""
    llava = loaded["llava"]
    assert vision_cache.supports(llava.model)
    judge = TransformersJudge(llava.model, llava.processor, kv_cache_mb=0)
    images = noise(2)
    first = judge.choice_probs(_questions(images), OPTIONS)
    again = judge.choice_probs(_questions(images), OPTIONS)
    assert judge.stats.images_encoded == 2 and judge.vision_cache.hits > 0
    assert all(abs(a[o] - b[o]) < 1e-5 for a, b in zip(first, again) for o in OPTIONS)
    plain = TransformersJudge(llava.model, llava.processor, prefix_reuse=False)
    assert not plain.vision_cache.enabled and plain.manifest()["vision_cache_mb"] == 0
    plain.choice_probs(_questions(images), OPTIONS)
    plain.choice_probs(_questions(images), OPTIONS)
    assert plain.stats.images_encoded == 2 * len(_questions(images))  # every request, every call
    qwen = loaded["qwen3_vl"]
    unshared = TransformersJudge(qwen.model, qwen.processor, prefix_reuse=False)
    assert not unshared.vision_cache.enabled


def test_a_key_count_that_does_not_match_the_forward_is_an_error(loaded):
    cache = vision_cache.VisionCache(loaded["qwen3_vl"].model)
    grid = torch.tensor([[1, 4, 4]])
    with pytest.raises(RuntimeError, match="2 image keys for 1 images"):
        cache._features(None, ["a", "b"], torch.zeros(16, 8), grid, {})
