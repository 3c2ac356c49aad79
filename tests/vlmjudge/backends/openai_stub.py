"""Loopback stubs of OpenAI-compatible servers for the openai backend's tests: canned chat
completions (and scripted faults) over real HTTP, so the SDK, our retry loop and our parsing
all run. A test fixture, not a product server: one thread per connection, loopback only."""
import json
import math
import threading
import time
from collections import deque
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from PIL import Image

from vlmjudge import Request, load_judge

#: The environment variable holding the key that clients of a loopback stub send.
STUB_KEY_ENV = "VLMJUDGE_TEST_STUB_KEY"
#: Faults a `ChatStub` can be told to answer with, one per request, in turn.
FAULTS = ("rate_limit", "server_error", "delay", "drop", "truncated_body", "html_body")
PROXY_HTML = b"<!DOCTYPE html><html><body><h1>Please wait while we check your browser</h1></body></html>"


@contextmanager
def stub_server(handler, monkeypatch, **state):
    """A loopback HTTP server with `handler` and `state` as its attributes (the handler reads
    `self.server.<name>`); yields (server, base URL with /v1) and sets STUB_KEY_ENV."""
    monkeypatch.setenv(STUB_KEY_ENV, "sk-stub")
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    for name, value in state.items():
        setattr(server, name, value)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def stub_client(url, model="stub-model", **kw):
    """An openai-backend judge for a loopback stub, retrying fast."""
    return load_judge(model, backend="openai", base_url=url, api_key_env=STUB_KEY_ENV, backoff_s=0.01, **kw)


def make_requests(n=12):
    """n requests over n // 3 images (three questions each, adjacent); every other one with a prefix."""
    out = []
    for i in range(n):
        image = Image.new("RGB", (8 + i // 3, 8), (10 * (i // 3), 40, 200 - 5 * (i // 3)))
        out.append(Request(images=[image], text=f"Question {i % 3}: is it blue?", system="Answer briefly.",
                           prefix="Answer:" if i % 2 else "", meta={"i": i}))
    return out


def user_text(body):
    """The text of the last user turn of a chat body."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p["text"] for p in content if p["type"] == "text")


def canned(body):
    """What the stub's 'model' answers: an echo of the question and its image count; with
    logprobs, first-token alternatives " Yes" 0.6, " No" 0.3, " Maybe" 0.1 (forms after a prefix)."""
    images = sum(1 for m in body["messages"] if isinstance(m["content"], list)
                 for p in m["content"] if p["type"] == "image_url")
    message = {"role": "assistant", "content": f"echo {images}: {user_text(body)}"}
    logprobs = None
    if body.get("logprobs"):
        lead = " " if body.get("continue_final_message") else ""
        top = [{"token": lead + w, "logprob": math.log(p)} for w, p in (("Yes", 0.6), ("No", 0.3), ("Maybe", 0.1))]
        logprobs = {"content": [{**top[0], "top_logprobs": top[: body.get("top_logprobs") or 1]}]}
        message["content"] = top[0]["token"]
    return {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "length" if logprobs else "stop", "message": message,
                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


def not_chat(handler):
    """Answer 404 (as a server without the route) to a POST that is not a chat completion, such
    as vLLM's /tokenize; True when it did."""
    if handler.path.rstrip("/").endswith("/chat/completions"):
        return False
    data = json.dumps({"error": {"message": "Not Found", "code": 404}}).encode()
    handler.send_response(404)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    return True


class QuietHandler(BaseHTTPRequestHandler):
    """A loopback handler that keeps its connections (HTTP/1.1), logs nothing and answers with a
    body whose length it declares; the stubs here and in the tests build on it."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        """Quiet."""

    def _send(self, status, data, content_type="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status, payload):
        self._send(status, json.dumps(payload).encode())


class ChatStub(QuietHandler):
    """Chat completions answered by `server.answer(body)` (default `canned`); each request first
    takes the next entry of `server.faults` (a deque of FAULTS or None) and fails that way.
    `server.bodies` records every body, `server.auth` every Authorization header; a set
    `server.key` refuses other keys with 401."""

    def do_POST(self):
        data = self.rfile.read(int(self.headers["Content-Length"]))
        if not_chat(self):
            return None
        s = self.server
        with s.lock:
            s.auth.append(self.headers.get("Authorization"))
            fault = s.faults.popleft() if s.faults else None
        if getattr(s, "key", None) and self.headers.get("Authorization") != f"Bearer {s.key}":
            return self._send(401, json.dumps({"error": {"message": "bad key", "code": 401}}).encode())
        body = json.loads(data)
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(2)  # the socket closes with no response
            return None
        if fault == "rate_limit":
            return self._send(429, b'{"error": {"message": "slow down"}}', headers=[("Retry-After", "0")])
        if fault == "server_error":
            return self._send(500, b'{"error": {"message": "boom"}}')
        if fault == "html_body":
            return self._send(200, PROXY_HTML, "text/html")
        if fault == "delay":
            time.sleep(s.delay_s)
        with s.lock:
            s.bodies.append(body)
        answer = s.answer(body)
        if isinstance(answer, (int, tuple)):  # a status (and message) with an error body
            status, message = answer if isinstance(answer, tuple) else (answer, "not served here")
            return self._send(status, json.dumps({"error": {"message": message, "code": status}}).encode())
        out = json.dumps(answer).encode()
        self._send(200, out[: len(out) // 2] if fault == "truncated_body" else out)


@contextmanager
def chat_stub(monkeypatch, answer=canned, faults=(), delay_s=1.0, key=None):
    """A `ChatStub` on loopback: yields (server, base URL)."""
    with stub_server(ChatStub, monkeypatch, answer=answer, faults=deque(faults), delay_s=delay_s, key=key,
                     bodies=[], auth=[], lock=threading.Lock()) as (server, url):
        yield server, url
