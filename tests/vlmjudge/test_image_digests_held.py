"""Each image is hashed once per judge call and once per method run (`digests_held`), however
many requests show it; outside such a block nothing is memoised, so a changed image is seen."""
import hashlib

import pytest
from PIL import Image

import vlmjudge.images as images_module
from vlmjudge.images import digests_held, image_bytes_digest
from vlmjudge.judge import Judge
from vlmjudge.requests import Answer, Request


class _CountingHashlib:
    """Stands in for `hashlib` inside `vlmjudge.images`, counting the image hashes started."""

    def __init__(self):
        self.started = 0

    def sha256(self, *args):
        self.started += 1
        return hashlib.sha256(*args)


@pytest.fixture
def hashes(monkeypatch):
    counter = _CountingHashlib()
    monkeypatch.setattr(images_module, "hashlib", counter)
    return counter


class _AnswersEveryRequest(Judge):
    """A judge that answers without a model: what is counted here is the hashing around it."""

    backend = "counting"

    def __init__(self):
        super().__init__(model_id="counting", batch_size=4)

    def _generate(self, requests):
        return [Answer("{}") for _ in requests]

    def _choice_probs(self, requests, options):  # the first option: eligible, every check positive
        return [{o: (0.9 if k == 0 else 0.1 / (len(options) - 1)) for k, o in enumerate(options)}
                for _ in requests]


def _images(n):
    return [Image.new("RGB", (8, 8), (40 * k, 0, 0)) for k in range(n)]


def test_one_call_hashes_each_image_once(hashes):
    pictures = _images(3)
    requests = [Request(images=[p], text=f"question {q}") for p in pictures for q in range(18)]
    _AnswersEveryRequest().choice_probs(requests, ["Yes", "No"])
    assert hashes.started == 3


def test_calls_outside_a_block_hash_again_and_inside_one_do_not(hashes):
    picture = _images(1)[0]
    judge = _AnswersEveryRequest()
    judge.generate([Request(images=[picture], text="a")])
    judge.generate([Request(images=[picture], text="b")])
    assert hashes.started == 2
    with digests_held():
        judge.generate([Request(images=[picture], text="c")])
        judge.generate([Request(images=[picture], text="d")])
    assert hashes.started == 3


def test_an_image_changed_between_calls_gets_its_new_digest():
    picture = _images(1)[0]
    before = image_bytes_digest(picture)
    picture.putpixel((0, 0), (1, 2, 3))
    assert image_bytes_digest(picture) != before


def test_equal_pixels_in_two_objects_are_hashed_apart_but_agree(hashes):
    a, b = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (4, 4), "red")
    with digests_held():
        assert image_bytes_digest(a) == image_bytes_digest(b)
        image_bytes_digest(a)
    assert hashes.started == 2


def test_a_terravis_run_hashes_each_image_once_over_all_its_stages(hashes):
    from terravis import TerraVis
    pictures = _images(2)
    judge = _AnswersEveryRequest()
    records = TerraVis(judge).score(pictures)
    assert [r.eligible for r in records] == [True, True]
    assert judge.stats.model_calls > 2 * 19  # eligibility, 18 checks, then evidence and severity
    assert hashes.started == 2


def test_the_memo_keeps_no_image_alive_and_a_reused_id_is_hashed_again(hashes):
    import gc
    import weakref
    with digests_held():
        first = Image.new("RGB", (4, 4), "red")
        image_bytes_digest(first)
        gone = weakref.ref(first)
        del first
        gc.collect()
        assert gone() is None
        image_bytes_digest(Image.new("RGB", (4, 4), "blue"))  # may reuse the dead image's id
    assert hashes.started == 2
