"""Shared by the serving tests and their subprocess client: requests, recorded answers, a server,
a judge that records what crossed the wire, and loopback stubs of other OpenAI-compatible servers."""
import threading
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

from PIL import Image

from vlmjudge import Answer, Request, load_judge
from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.judge import Judge
from vlmjudge.serve import JudgeServer

MODEL = "replay-judge"
#: The environment variable holding the key that clients of a loopback stub send.
STUB_KEY_ENV = "VLMJUDGE_TEST_STUB_KEY"


def make_requests(n=30):
    """n requests over n // 3 images (three questions each, adjacent); some with a prefix."""
    out = []
    for i in range(n):
        image = Image.new("RGB", (8 + i // 3, 8), (10 * (i // 3), 40, 200 - 5 * (i // 3)))
        out.append(Request(images=[image], text=f"Question {i % 3}: is it blue?", system="Answer briefly.",
                           prefix="Answer:" if i % 2 else "", meta={"i": i}))
    return out


def recorded(requests):
    """Answers keyed by content hash, with choice probabilities too."""
    answers = {}
    for i, r in enumerate(requests):
        yes = (i % 5 + 1) / 7
        answers[r.content_hash()] = {"text": f"{'Yes' if yes > 0.5 else 'No'} (answer {i})",
                                     "probs": {"Yes": yes, "No": 1 - yes}}
    return answers


def replay_judge(requests):
    return ReplayJudge(recorded(requests), model_id=MODEL)


def client_kwargs(server, **kw):
    """A fast-retrying client for loopback tests."""
    base = {"base_url": server.url + "/v1", "timeout_s": 2.0, "backoff_s": 0.01, "max_retries": 8,
            "concurrency": 4}
    return {**base, **kw}


def start_server(judge, **kw):
    return JudgeServer(judge, model_name=MODEL, **kw).start()


def raw_post(server, body, headers=None, path="/v1/chat/completions", timeout=10.0):
    """POST raw bytes (or a JSON-able value) with http.client: (status, decoded JSON body)."""
    import http.client
    import json
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    host, port = server.httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", path, data, {"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


class RecordingJudge(Judge):
    """Remembers the requests it got (to check what crosses the wire); `answer(request)` is its
    generated answer, and its option probabilities are uniform."""

    backend = "recorder"

    def __init__(self, answer=lambda request: Answer("{}", "stop", 1)):
        super().__init__(model_id=MODEL)
        self.seen = []
        self._reply = answer

    def _generate(self, chunk):
        self.seen.extend(chunk)
        return [self._reply(r) for r in chunk]

    def _choice_probs(self, chunk, options):
        self.seen.extend(chunk)
        return [{o: 1 / len(options) for o in options} for _ in chunk]


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
