"""The OpenAI-compatible backend sends a call's requests in prefix order (shared prefixes
adjacent, one burst each), answers in the caller's order, and adds up the prompt tokens the
server says its prefix cache served. Against a loopback stub with a one-entry prefix cache."""
import json
import math
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from PIL import Image
from openai_stub import not_chat, stub_client, stub_server

from vlmjudge import Request
from vlmjudge.backends.openai.images import UUID_PREFIX
from vlmjudge.backends.openai.replies import usage_counts
from vlmjudge.backends.openai.wire import ImageURLs, grouped_order
from vlmjudge.images import image_bytes_digest

#: Tokens the stub counts for an image and for each word of text.
IMAGE_TOKENS = 100


def _parts(body):
    """The prompt as (kind, value) parts, in order: roles, texts, image URLs."""
    out = []
    for message in body["messages"]:
        out.append(("role", message["role"]))
        content = message["content"]
        for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if part["type"] == "image_url":  # named by its uuid where it has one (vLLM), else its URL
                out.append(("image", part.get("uuid") or part["image_url"]["url"]))
            else:
                out.append(("text", part["text"]))
    return out


def _tokens(part):
    return IMAGE_TOKENS if part[0] == "image" else 1 + len(part[1].split())


class PrefixServer:
    """What arrived, in order, and a prefix cache that holds the last prompt only (a small cache
    under load): a request's leading parts equal to the last prompt's are served from it."""

    def __init__(self):
        self.arrivals, self.last, self.reported_cached, self.reported_prompt = [], [], 0, 0
        self.lock = threading.Lock()

    def complete(self, body):
        parts = _parts(body)
        with self.lock:
            self.arrivals.append(parts)
            shared = 0
            while shared < min(len(parts), len(self.last)) and parts[shared] == self.last[shared]:
                shared += 1
            self.last = parts
            prompt = sum(map(_tokens, parts))
            cached = sum(map(_tokens, parts[:shared]))
            self.reported_prompt += prompt
            self.reported_cached += cached
        question = [v for k, v in parts if k == "text"][-1]
        usage = {"prompt_tokens": prompt, "completion_tokens": 2, "total_tokens": prompt + 2,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": f"echo: {question}"}}
        if body.get("logprobs"):
            yes = 0.1 + 0.8 * (len(question) % 7) / 6
            top = [{"token": "Yes", "logprob": math.log(yes)}, {"token": "No", "logprob": math.log(1 - yes)}]
            choice["logprobs"] = {"content": [{"token": "Yes", "logprob": math.log(yes), "top_logprobs": top}]}
        return {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"], "choices": [choice],
                "usage": usage}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        """Quiet."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not_chat(self):
            return
        data = json.dumps(self.server.stub.complete(body)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def stub(monkeypatch):
    with stub_server(_Handler, monkeypatch, stub=PrefixServer()) as (server, url):
        yield server.stub, url


def _images():
    return [Image.new("RGB", (6, 6), colour) for colour in ("red", "green", "blue")]


def _interleaved(images, rounds=3):
    """Questions that visit the images in turn: a, b, c, a, b, c, ..."""
    return [Request(images=[images[k]], text=f"Question {r} about picture {k}: is it bright?",
                    system="You judge images.") for r in range(rounds) for k in range(len(images))]


def _image_of(parts):
    return next(v for k, v in parts if k == "image")


def test_requests_sharing_a_prefix_arrive_adjacent_and_answers_keep_input_order(stub):
    server, url = stub
    images = _images()
    requests = _interleaved(images)
    judge = stub_client(url, concurrency=1, batch_size=4)  # chunks smaller than a call: ordering is per call
    answers = judge.generate(requests)
    assert [a.text for a in answers] == [f"echo: {r.text}" for r in requests]
    seen = [_image_of(p) for p in server.arrivals]
    assert seen == [UUID_PREFIX + image_bytes_digest(images[k]) for k in (0, 0, 0, 1, 1, 1, 2, 2, 2)]
    # within one image the caller's order holds (stable)
    questions = [[v for k, v in p if k == "text"][-1] for p in server.arrivals]
    assert questions == [requests[i].text for i in (0, 3, 6, 1, 4, 7, 2, 5, 8)]


def test_cached_prompt_tokens_are_counted_from_usage(stub):
    server, url = stub
    requests = _interleaved(_images())
    judge = stub_client(url, concurrency=1)
    judge.generate(requests)
    # grouped: each image's later questions find the system turn and the image cached
    assert judge.stats.cached_prompt_tokens == server.reported_cached > 6 * IMAGE_TOKENS
    assert judge.stats.prefill_tokens == server.reported_prompt
    assert judge.stats.generated_tokens == 2 * len(requests)
    assert judge.stats.as_dict()["cached_prompt_tokens"] == server.reported_cached
    # choice_probs responses count too
    before = judge.stats.cached_prompt_tokens
    judge.choice_probs([Request(images=[_images()[0]], text=t, system="You judge images.")
                        for t in ("Is it red?", "Is it round?")], ["Yes", "No"])
    assert judge.stats.cached_prompt_tokens == server.reported_cached > before


def test_in_caller_order_sent_one_by_one_the_cache_would_miss(stub):
    """The counter reads what the server reports: sent in the caller's order, the one-entry
    cache serves only the system turn; the judge's order gets the images served too."""
    server, url = stub
    requests = _interleaved(_images())
    judge = stub_client(url, concurrency=1)
    for r in requests:  # one call per request: nothing to reorder
        judge.generate([r])
    unordered = judge.stats.cached_prompt_tokens
    assert unordered == server.reported_cached and unordered < IMAGE_TOKENS
    ordered = stub_client(url, concurrency=1)
    ordered.generate(requests)
    assert ordered.stats.cached_prompt_tokens >= unordered + 6 * IMAGE_TOKENS


@pytest.mark.parametrize("concurrency", [1, 4])
def test_results_come_back_in_input_order_under_concurrency(stub, concurrency):
    _, url = stub
    images = _images()
    requests = _interleaved(images, rounds=4) + [Request(text="No image: is it late?")]
    judge = stub_client(url, concurrency=concurrency, batch_size=5)
    assert [a.text for a in judge.generate(requests)] == [f"echo: {r.text}" for r in requests]
    probs = judge.choice_probs(requests, ["Yes", "No"])
    for r, p in zip(requests, probs):
        yes = 0.1 + 0.8 * (len(r.text) % 7) / 6
        assert p == pytest.approx({"Yes": yes, "No": 1 - yes})


def test_grouped_order_puts_the_longest_shared_prefixes_closest():
    a, b = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (4, 4), "blue")
    reqs = [Request(images=[a], text="q0", system="S"),
            Request(images=[b], text="q1", system="S"),
            Request(images=[a], text="q2", system="T"),     # another system turn: another prefix
            Request(text="q3", system="S"),
            Request(images=[a], text="q4", system="S"),
            Request(images=[a], text="q0", system="S", prefix="Answer:"),  # same question, longer prompt
            Request(text="q6", system="T")]
    assert grouped_order(reqs, ImageURLs()) == [0, 5, 4, 1, 3, 2, 6]


def test_usage_counts_read_what_servers_send():
    assert usage_counts({"usage": {"prompt_tokens": 9, "completion_tokens": 2,
                                   "prompt_tokens_details": {"cached_tokens": 5}}}) == (9, 2, 5)
    assert usage_counts({"usage": {"prompt_tokens": 9, "completion_tokens": 2,
                                   "prompt_tokens_details": None}}) == (9, 2, 0)
    assert usage_counts({"usage": None}) == (0, 0, 0)
    assert usage_counts({}) == (0, 0, 0)
