"""Shared by the serving tests and their subprocess client: requests, recorded answers, a server."""
from PIL import Image

from vlmjudge import Request
from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.serve import JudgeServer

MODEL = "replay-judge"


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
