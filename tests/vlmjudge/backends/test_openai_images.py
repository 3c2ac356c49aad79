"""Each image sent to a server once where it allows: encoded once per judge, written once as a file
for a server on this machine, named by a uuid for vLLM and sent as the uuid alone once the server
holds it; a cache miss is answered by sending the data again, and the manifest says which way
images went. Against a loopback stub (a real vLLM server: test_vllm_openai_server.py)."""
import pickle
import threading
import time
from urllib.parse import urlsplit
from urllib.request import url2pathname

import numpy as np
import pytest
from openai_stub import canned, chat_stub, stub_client
from PIL import Image

from vlmjudge import Request
from vlmjudge.backends.openai.images import UUID_PREFIX
from vlmjudge.images import image_bytes_digest


def _images(n=3):
    rng = np.random.default_rng(4)
    return [Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)) for _ in range(n)]


def _asked(images, questions=3):
    return [Request(images=[im], text=f"Question {q}: is it sharp?", system="Judge.") for im in images
            for q in range(questions)]


def _image_parts(body):
    return [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]
            if p["type"] == "image_url"]


def _by_uuid(bodies):
    """image -> [whether each part showing it carried data], in arrival order; an image is named
    by its uuid, else by its URL."""
    out = {}
    for body in bodies:
        for part in _image_parts(body):
            name = part.get("uuid") or part["image_url"]["url"]
            out.setdefault(name, []).append(part["image_url"] is not None)
    return out


def test_a_vllm_server_gets_each_image_once_then_its_uuid(monkeypatch):
    images = _images()
    with chat_stub(monkeypatch) as (server, url):
        judge = stub_client(url, concurrency=1)
        judge.generate(_asked(images))
        judge.generate(_asked(images, questions=2))  # a later stage: the server holds every image
    sent = _by_uuid(server.bodies)
    assert set(sent) == {UUID_PREFIX + image_bytes_digest(im) for im in images}
    assert all(flags == [True] + [False] * 4 for flags in sent.values())
    assert judge.manifest()["images"] == {"transfer": "data", "uuids": True, "encoded": 3, "sent_with_data": 3,
                                          "sent_as_uuid": 12, "resent_after_miss": 0}


def test_followers_wait_for_the_request_that_carries_the_image(monkeypatch):
    """Under concurrency the first request of an image carries it; the others wait for its answer
    and send the uuid alone, however many start at once."""
    images = _images(2)

    def slow(body):
        time.sleep(0.05)
        return canned(body)

    with chat_stub(monkeypatch, answer=slow) as (server, url):
        judge = stub_client(url, concurrency=8)
        answers = judge.generate(_asked(images, questions=6))
    assert all(a.ok for a in answers)
    assert sorted(flags.count(True) for flags in _by_uuid(server.bodies).values()) == [1, 1]


def test_requests_with_two_images_in_either_order_never_wait_on_each_other(monkeypatch):
    a, b = _images(2)
    requests = [Request(images=pair, text=f"Which is sharper? {i}") for i, pair in enumerate([[a, b], [b, a]] * 4)]
    with chat_stub(monkeypatch) as (server, url):
        judge = stub_client(url, concurrency=4, timeout_s=5.0)
        done = []
        worker = threading.Thread(target=lambda: done.append(judge.generate(requests)))
        worker.start()
        worker.join(30)
    assert done and all(answer.ok for answer in done[0])


def test_a_cache_miss_is_answered_by_sending_the_data_again(monkeypatch):
    images = _images(1)
    misses = []

    def evicting(body):
        if any(p["image_url"] is None for p in _image_parts(body)) and not misses:
            misses.append(body)
            return 400, "Cache miss for image at index 0 but data is not provided."
        return canned(body)

    with chat_stub(monkeypatch, answer=evicting) as (server, url):
        judge = stub_client(url, concurrency=1)
        answers = judge.generate(_asked(images, questions=4))
    assert all(a.ok for a in answers) and len(misses) == 1
    # introduced; refused by uuid alone (evicted); sent whole; then by uuid alone again
    assert _by_uuid(server.bodies) == {UUID_PREFIX + image_bytes_digest(images[0]): [True, False, True, False, False]}
    assert judge.manifest()["images"]["resent_after_miss"] == 1 and judge.manifest()["images"]["uuids"]


def test_a_server_that_takes_no_uuid_alone_gets_data_from_then_on(monkeypatch):
    def strict(body):
        if any(p["image_url"] is None for p in _image_parts(body)):
            return 400, "image_url: Input should be a valid dictionary"
        return canned(body)

    with chat_stub(monkeypatch, answer=strict) as (server, url):
        judge = stub_client(url, concurrency=1, batch_size=16)  # one chunk: its bodies are built at once
        assert all(a.ok for a in judge.generate(_asked(_images(2), questions=3)))
        assert judge.generate(_asked(_images(3)[2:], questions=1))[0].ok
    flags = list(_by_uuid(server.bodies).values())
    # the first image: introduced, refused by uuid alone, sent whole, then whole; the second image's
    # parts, built before the refusal, keep their uuid and go whole; a later call's carry none
    assert flags == [[True, False, True, True], [True, True, True], [True]]
    assert "uuid" not in _image_parts(server.bodies[-1])[0]
    assert judge.manifest()["images"]["uuids"] is False


def test_file_urls_are_written_once_in_a_folder_of_the_run(monkeypatch, tmp_path):
    images = _images(2)
    with chat_stub(monkeypatch) as (server, url):
        judge = stub_client(url, concurrency=1, media_dir=tmp_path, image_uuids=False)
        judge.generate(_asked(images))
        judge.choice_probs(_asked(images, questions=1), ["Yes", "No"])
    urls = [p["image_url"]["url"] for body in server.bodies for p in _image_parts(body)]
    assert len(urls) == 8 and len(set(urls)) == 2 and all(u.startswith("file://") for u in urls)
    for u, image in zip(dict.fromkeys(urls), images):
        path = url2pathname(urlsplit(u).path)
        assert path.startswith(str(tmp_path.resolve())) and path.endswith(".ppm")  # RGB: raw pixels
        with Image.open(path) as written:  # lossless: the pixels the request holds
            assert image_bytes_digest(written.convert("RGB")) == image_bytes_digest(image)
    assert judge.manifest()["images"] == {"transfer": "file", "uuids": False, "encoded": 2, "sent_with_data": 8,
                                          "sent_as_uuid": 0, "resent_after_miss": 0}


def test_hosted_apis_get_data_urls_without_uuids(monkeypatch, tmp_path):
    with chat_stub(monkeypatch) as (server, url):
        judge = stub_client(url, concurrency=1, server="openai")
        judge.generate(_asked(_images(1), questions=2))
    parts = [p for body in server.bodies for p in _image_parts(body)]
    assert all("uuid" not in p and p["image_url"]["url"].startswith("data:image/png;base64,") for p in parts)
    with pytest.raises(ValueError, match="image_uuids are a vLLM extension"):
        stub_client(url, server="openai", image_uuids=True)
    with pytest.raises(ValueError, match="is not a folder"):
        stub_client(url, media_dir=tmp_path / "missing")


def test_a_pickled_judge_starts_with_no_images_held(monkeypatch):
    images = _images(1)
    with chat_stub(monkeypatch) as (server, url):
        judge = stub_client(url, concurrency=1)
        judge.generate(_asked(images, questions=2))
        copy = pickle.loads(pickle.dumps(judge))
        copy.generate(_asked(images, questions=2))  # another process: it sends the image itself
    assert list(_by_uuid(server.bodies).values()) == [[True, False, True, False]]
    assert copy.manifest()["images"]["encoded"] == 1


@pytest.mark.parametrize("mode, suffix", [("RGB", ".ppm"), ("L", ".pgm"), ("RGBA", ".png"), ("P", ".png"),
                                          ("I;16", ".png")])
def test_a_written_image_reads_back_pixel_for_pixel_in_every_mode(tmp_path, mode, suffix):
    """The files vLLM reads are lossless in each mode: raw PPM/PGM for RGB and L, PNG otherwise."""
    from vlmjudge.backends.openai.images import ImageStore, file_format

    rng = np.random.default_rng(3)
    image = Image.fromarray(rng.integers(0, 256, (9, 13, 3), dtype=np.uint8)).convert(mode)
    assert file_format(image)[1] == suffix
    store = ImageStore(media_dir=tmp_path)
    path = url2pathname(urlsplit(store.url(image)).path)
    assert path.endswith(suffix)
    with Image.open(path) as written:
        assert written.mode == image.mode and written.tobytes() == image.tobytes()
