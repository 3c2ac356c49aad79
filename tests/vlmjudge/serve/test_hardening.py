"""`vlmjudge serve` refuses bad input with a 4xx JSON error and answers every failure with
JSON: malformed bodies, caps, the key checked before the body, slow bodies, a full queue."""
import base64
import http.client
import json
import socket
import time

import pytest
from PIL import Image
from serving_support import MODEL, RecordingJudge, make_requests, raw_post, replay_judge, start_server

from vlmjudge import Answer
from vlmjudge.serve import ServeLimits
from vlmjudge.wire import png_data_url

HI = [{"role": "user", "content": "hi"}]


def _png_data_url(width, height):
    return png_data_url(Image.new("RGB", (width, height)))


def _image_message(url):
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": "Is it dark?"}]}]


def _read_response(sock):
    """(status, JSON body) of one HTTP response read from a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    return int(head.split(b" ", 2)[1]), json.loads(body)


MALFORMED = {
    "not JSON": b"{",
    "empty body": b"",
    "invalid UTF-8": b'{"messages": "\xff\xfe"}',
    "deeply nested JSON": b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "nested past the depth cap": ('{"messages": [{"role": "user", "content": "hi"}], "x": ' + "[" * 80
                                  + "]" * 80 + "}").encode(),
    "max_tokens 1e400": b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1e400}',
    "temperature NaN": b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
    "temperature Infinity": b'{"messages": [{"role": "user", "content": "hi"}], "temperature": Infinity}',
    "top_p -Infinity": b'{"messages": [{"role": "user", "content": "hi"}], "top_p": -Infinity}',
    "integer over the digit limit": b'{"messages": [], "seed": ' + b"9" * 5000 + b"}",
    "stop 123": {"messages": HI, "stop": 123},
    "stop list of numbers": {"messages": HI, "stop": [1, 2]},
    "empty stop string": {"messages": HI, "stop": [""]},
    "max_tokens string": {"messages": HI, "max_tokens": "10"},
    "max_tokens true": {"messages": HI, "max_tokens": True},
    "max_tokens negative": {"messages": HI, "max_tokens": -5},
    "max_tokens fraction": {"messages": HI, "max_tokens": 2.5},
    "temperature string": {"messages": HI, "temperature": "hot"},
    "temperature negative": {"messages": HI, "temperature": -1},
    "top_p above 1": {"messages": HI, "top_p": 2},
    "seed string": {"messages": HI, "seed": "abc"},
    "seed past 64 bits": {"messages": HI, "seed": 2**70},
    "body a list": [HI],
    "body null": None,
    "messages a string": {"messages": "hi"},
    "message not an object": {"messages": [1]},
    "unknown role": {"messages": [{"role": "robot", "content": "hi"}]},
    "content a number": {"messages": [{"role": "user", "content": 5}]},
    "text part not a string": {"messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]},
    "part not an object": {"messages": [{"role": "user", "content": ["hi"]}]},
    "image URL to fetch": {"messages": _image_message("http://example.invalid/a.png")},
    "bad base64": {"messages": _image_message("data:image/png;base64,***")},
    "base64 of no image": {"messages": _image_message("data:image/png;base64," + base64.b64encode(b"nope").decode())},
    "image over the pixel cap": {"messages": _image_message(_png_data_url(300, 300))},
    "response_format a string": {"messages": HI, "response_format": "json"},
    "json_schema a string": {"messages": HI, "response_format": {"type": "json_schema", "json_schema": "x"}},
    "schema string not JSON": {"messages": HI, "guided_json": "{nope"},
    "structured_outputs a list": {"messages": HI, "structured_outputs": ["grammar"]},
    "options with an object": {"messages": HI, "vlmjudge_options": [{"a": 1}, "No"]},
    "decoding extension not an object": {"messages": HI, "vlmjudge_options": ["Yes", "No"], "vlmjudge_decoding": 3},
    "model a number": {"messages": HI, "model": 7},
    "prompt over the token cap": {"messages": [{"role": "user", "content": "word " * 400}]},
}


@pytest.fixture(scope="module")
def server():
    limits = ServeLimits(max_tokens=64, max_prompt_tokens=500, max_image_pixels=200 * 200, read_timeout_s=0.5,
                         body_timeout_s=2.0)
    with start_server(replay_judge(make_requests(3)), limits=limits) as running:
        yield running


@pytest.mark.parametrize("name", list(MALFORMED))
def test_every_malformed_body_gets_a_4xx_json_error(server, name):
    status, body = raw_post(server, MALFORMED[name])
    assert 400 <= status < 500, (status, body)
    assert body["error"]["code"] == status and body["error"]["message"]
    assert body["error"]["type"] == "invalid_request_error"


def test_at_least_twenty_kinds_of_malformed_body():
    assert len(MALFORMED) >= 20


class _Recorder(RecordingJudge):
    """Answers with the whole token budget, so a capped max_tokens shows in the answer."""

    def __init__(self):
        super().__init__(answer=lambda r: Answer("ok", "length", r.decoding.max_new_tokens))


def test_ten_million_tokens_are_capped():
    recorder = _Recorder()
    with start_server(recorder, limits=ServeLimits(max_tokens=128)) as running:
        status, body = raw_post(running, {"messages": HI, "max_tokens": 10_000_000})
        status_c, _ = raw_post(running, {"messages": HI, "max_completion_tokens": 10**7})
        status_small, _ = raw_post(running, {"messages": HI, "max_tokens": 8})
    assert (status, status_c, status_small) == (200, 200, 200)
    assert [r.decoding.max_new_tokens for r in recorder.seen] == [128, 128, 8]
    assert body["choices"][0]["finish_reason"] == "length"


def test_the_key_is_checked_before_the_body_is_read_and_on_models():
    with start_server(replay_judge(make_requests(1)), api_key="sk-right",
                      limits=ServeLimits(read_timeout_s=5.0)) as running:
        host, port = running.httpd.server_address[:2]
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-wrong\r\n"
                         b"Content-Length: 100000\r\n\r\n{\"messa")  # most of the body never comes
            started = time.monotonic()
            status, body = _read_response(sock)
        assert status == 401 and time.monotonic() - started < 2  # not after a read timeout
        assert body["error"]["type"] == "authentication_error"
        conn = http.client.HTTPConnection(host, port, timeout=5)
        conn.request("GET", "/v1/models")
        models = conn.getresponse()
        assert models.status == 401 and json.loads(models.read())["error"]["code"] == 401
        conn = http.client.HTTPConnection(host, port, timeout=5)
        conn.request("GET", "/v1/models", headers={"Authorization": "Bearer sk-right"})
        assert json.loads(conn.getresponse().read())["data"][0]["id"] == MODEL
        conn = http.client.HTTPConnection(host, port, timeout=5)
        conn.request("GET", "/health")  # open: load balancers probe it
        health = json.loads(conn.getresponse().read())
        assert health["status"] == "ok" and health["max_queue"] == ServeLimits().max_queue


def test_a_half_sent_body_times_out_with_408(server):
    host, port = server.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"mess")
        started = time.monotonic()
        status, body = _read_response(sock)
    assert status == 408 and time.monotonic() - started < 5 and body["error"]["code"] == 408


@pytest.mark.parametrize("head, status", [
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", 413),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\n", 400),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n", 411),
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
    (b"PUT /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 501),
    (b"GARBAGE\r\n\r\n", 400),
    (b"POST /v1/nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 404),
])
def test_protocol_errors_are_json_too(server, head, status):
    host, port = server.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(head)
        got, body = _read_response(sock)
    assert got == status and body["error"]["code"] == status, body


class _Broken(_Recorder):
    def _generate(self, chunk):
        return ["not an Answer" for _ in chunk]  # a judge bug: the handler must still answer


def test_a_handler_exception_is_a_500_json_error():
    with start_server(_Broken()) as running:
        status, body = raw_post(running, {"messages": HI})
        again, _ = raw_post(running, {"messages": HI})  # the server lives on
    assert (status, again) == (500, 500) and body["error"]["type"] == "server_error"


class _Slow(_Recorder):
    def _generate(self, chunk):
        time.sleep(0.5)
        return super()._generate(chunk)


def test_a_full_queue_is_a_503_with_retry_after():
    with start_server(_Slow(), max_batch=1, limits=ServeLimits(max_queue=1)) as running:
        import threading
        first = threading.Thread(target=raw_post, args=(running, {"messages": HI}))
        first.start()
        time.sleep(0.2)
        status, body = raw_post(running, {"messages": [{"role": "user", "content": "another"}]})
        first.join()
    assert status == 503 and body["error"]["type"] == "server_busy"
