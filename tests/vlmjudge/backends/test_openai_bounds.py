"""The openai backend against servers that never finish: a deadline bounds each attempt whole
(connect to last byte, not each read), a cap bounds each reply, and an answer longer than its
max_tokens allow fails. Loopback servers started here; each ends as a counted failure."""
import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import psutil
import pytest
from fault_proxy import fault_proxy
from openai_stub import canned, chat_stub, make_requests, stub_client, stub_server

from vlmjudge import Request, ResponseCache
from vlmjudge.backends.openai.replies import reply_byte_cap
from vlmjudge.requests import Decoding


class HostileServer(BaseHTTPRequestHandler):
    """Answers every POST as `server.mode` says: dripping its head or its body one byte a second,
    an endless chunked body, a canned answer padded to `server.pad` characters (with or without
    Content-Length), or gzip-compressed. `server.sent` counts the body bytes written."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        """Quiet."""

    def _head(self, *lines):
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(
            line + b"\r\n" for line in lines) + b"\r\n")

    def _drip(self, data):
        for i in range(len(data)):
            self.wfile.write(data[i:i + 1])
            self.wfile.flush()
            time.sleep(1.0)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        s, mode = self.server, self.server.mode
        answer = canned(body)
        answer["choices"][0]["message"]["content"] += "x" * s.pad
        data = json.dumps(answer).encode()
        try:
            if mode == "drip_head":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                self._drip(b"a" * 3600)
            elif mode == "drip_body":
                self._head(b"Content-Length: %d" % len(data))
                self._drip(data)
            elif mode == "endless":
                self._head(b"Transfer-Encoding: chunked")
                chunk = b"x" * (1 << 16)
                while not s.stop.is_set():
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    s.sent += len(chunk)
            elif mode == "chunked":
                self._head(b"Transfer-Encoding: chunked")
                for start in range(0, len(data), 1 << 16):
                    piece = data[start:start + (1 << 16)]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    s.sent += len(piece)
                self.wfile.write(b"0\r\n\r\n")
            elif mode == "gzip":
                packed = gzip.compress(data)
                self._head(b"Content-Encoding: gzip", b"Content-Length: %d" % len(packed))
                self.wfile.write(packed)
            else:
                self._head(b"Content-Length: %d" % len(data))
                self.wfile.write(data)
                s.sent += len(data)
        except OSError:  # the client hung up: what a bounded client does
            self.close_connection = True


def hostile(monkeypatch, mode, pad=0):
    return stub_server(HostileServer, monkeypatch, mode=mode, pad=pad, sent=0, stop=threading.Event())


def test_a_server_dripping_its_head_fails_each_attempt_at_its_deadline(monkeypatch):
    """The issue's case: one byte a second held a timeout_s=5 request for 75 s. With the default
    retries, a request spends at most two attempts at their deadlines (`TIMEOUT_ATTEMPTS`)."""
    with hostile(monkeypatch, "drip_head") as (_, url):
        judge = stub_client(url, timeout_s=3)
        started = time.monotonic()
        answers = judge.generate(make_requests(1))
        took = time.monotonic() - started
    assert answers[0].finish_reason == "error" and answers[0].text == ""
    assert 6 <= took < 12, took  # two attempts, each ended by its 3 s deadline
    assert judge.counters["timeouts"] == 2 and judge.counters["retries"] == 1
    assert judge.counters["failed_requests"] == 1 == judge.manifest()["failed_requests"]


def test_a_server_dripping_its_body_fails_at_the_deadline(monkeypatch):
    with hostile(monkeypatch, "drip_body") as (_, url):
        judge = stub_client(url, timeout_s=2, max_retries=0)
        started = time.monotonic()
        answers = judge.generate(make_requests(1))
        took = time.monotonic() - started
    assert answers[0].finish_reason == "error" and 2 <= took < 6, took
    assert judge.counters["timeouts"] == 1 and judge.counters["failed_requests"] == 1


def test_an_endless_body_fails_at_the_cap_with_bounded_memory(monkeypatch):
    request = make_requests(1)[0]
    process = psutil.Process()
    peak, done = [process.memory_info().rss], threading.Event()

    def sample():
        while not done.is_set():
            peak.append(process.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    with hostile(monkeypatch, "endless") as (server, url):
        judge = stub_client(url, timeout_s=60, max_retries=3)
        sampler.start()
        started = time.monotonic()
        answers = judge.generate([request])
        took = time.monotonic() - started
        done.set()
        server.stop.set()
    sampler.join()
    cap = reply_byte_cap({"max_tokens": request.decoding.max_new_tokens})
    assert answers[0].finish_reason == "error" and took < 30
    assert judge.counters["oversized_responses"] == 1 and judge.counters["retries"] == 0  # refused, not retried
    assert server.sent <= cap + (32 << 20)  # what the client read, plus the sockets' buffers
    assert max(peak) - peak[0] < 300 << 20, (max(peak) - peak[0]) >> 20


@pytest.mark.parametrize("mode", ["plain", "chunked"])
def test_a_50_mb_answer_is_refused_and_stored_nowhere(monkeypatch, tmp_path, mode):
    """Refused by its declared length before its body is read, or by the bytes counted."""
    cache = tmp_path / "answers.sqlite"
    with hostile(monkeypatch, mode, pad=50 << 20) as (server, url):
        judge = stub_client(url, cache=cache, max_retries=2)
        answers = judge.generate(make_requests(1))
        server.stop.set()
    assert answers[0].finish_reason == "error" and answers[0].text == ""
    assert judge.manifest()["oversized_responses"] == 1 and judge.counters["retries"] == 0
    assert len(ResponseCache(cache)) == 0
    assert server.sent <= (8 << 20) + (32 << 20) if mode == "chunked" else server.sent == 0


def test_the_cap_is_configurable_and_a_reply_within_it_passes(monkeypatch):
    requests = [Request(text="Is it blue?", decoding=Decoding(max_new_tokens=64))]
    with hostile(monkeypatch, "plain", pad=20_000) as (_, url):
        tight = stub_client(url, max_response_bytes=10_000)
        refused = tight.generate(requests)
        roomy = stub_client(url, max_response_bytes=1 << 20)
        kept = roomy.generate(requests)
    assert refused[0].finish_reason == "error" and tight.counters["oversized_responses"] == 1
    assert kept[0].ok and len(kept[0].text) > 20_000 and roomy.manifest()["max_response_bytes"] == 1 << 20
    with pytest.raises(ValueError, match="max_response_bytes"):
        stub_client("http://127.0.0.1:9/v1", max_response_bytes=0)


def test_an_answer_longer_than_max_tokens_allow_is_a_counted_failure(monkeypatch):
    """Within the byte cap, yet more characters than 8 tokens can spell, or more tokens counted."""
    short = [Request(text="Is it blue?", decoding=Decoding(max_new_tokens=8))]
    with hostile(monkeypatch, "plain", pad=8 * 1024 + 1) as (_, url):
        judge = stub_client(url)
        answers = judge.generate(short)
    assert answers[0].finish_reason == "error" and judge.stats.malformed_responses == 1

    def counted(body):  # one token too many for the short request, within budget for the other
        out = canned(body)
        out["usage"]["completion_tokens"] = 9
        return out
    with chat_stub(monkeypatch, answer=counted) as (_, url):
        judge = stub_client(url)
        answers = judge.generate(short + make_requests(1))
    assert [a.finish_reason for a in answers] == ["error", "stop"]
    assert judge.manifest()["malformed_responses"] == 1 and judge.counters["failed_requests"] == 1


def test_a_compressed_reply_is_refused(monkeypatch):
    with hostile(monkeypatch, "gzip") as (_, url):
        judge = stub_client(url)
        answers = judge.generate(make_requests(1))
    assert answers[0].finish_reason == "error" and judge.counters["oversized_responses"] == 1


def test_the_environments_proxy_carries_the_requests_unless_no_proxy_exempts(monkeypatch):
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with chat_stub(monkeypatch) as (server, url), fault_proxy(url) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.rsplit("/v1", 1)[0])
        through = stub_client(url).generate(make_requests(2))
        assert len(proxy.seen) == 2 and all(a.ok for a in through)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct = stub_client(url).generate(make_requests(1))
        assert len(proxy.seen) == 2 and direct[0].ok and len(server.bodies) == 3
