"""A bounded loopback load test: 200 clients connect to `vlmjudge serve` at once, and every
one of them is answered (no connection reset, no refusal). 127.0.0.1 only; bounded in count
and time (each socket times out, the test joins its threads with a deadline)."""
import http.client
import json
import threading
import time

from serving_support import MODEL

from vlmjudge import Answer
from vlmjudge.judge import Judge
from vlmjudge.serve import JudgeServer

CLIENTS = 200
DEADLINE_S = 60.0


class _Echo(Judge):
    """Answers each request with its own text, a little slowly, so requests pile up in the queue."""

    backend = "echo"

    def _generate(self, chunk):
        time.sleep(0.01)
        return [Answer(r.chat()[-1]["content"], "stop", 1) for r in chunk]

    def _choice_probs(self, chunk, options):
        return [{o: 1 / len(options) for o in options} for _ in chunk]


def _client(port, i, start, outcomes):
    start.wait()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE_S / 2)
        body = {"model": MODEL, "messages": [{"role": "user", "content": f"client {i}"}], "max_tokens": 4}
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        outcomes[i] = (response.status, json.loads(response.read())["choices"][0]["message"]["content"])
        conn.close()
    except Exception as exc:  # recorded, then asserted on: a reset is exactly what this test looks for
        outcomes[i] = (type(exc).__name__, str(exc))


def test_two_hundred_concurrent_clients_get_no_resets():
    judge = _Echo(model_id=MODEL, batch_size=64)
    with JudgeServer(judge, model_name=MODEL, max_wait_s=0.01) as server:
        port = server.httpd.server_address[1]
        assert server.httpd.request_queue_size >= CLIENTS
        outcomes = {}
        start = threading.Barrier(CLIENTS)
        threads = [threading.Thread(target=_client, args=(port, i, start, outcomes), daemon=True)
                   for i in range(CLIENTS)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + DEADLINE_S
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        status = server.batcher.status()
    failures = {i: o for i, o in outcomes.items() if o[0] != 200}
    assert len(outcomes) == CLIENTS and not failures, failures
    assert all(outcomes[i][1] == f"client {i}" for i in range(CLIENTS))
    assert status["waiting"] == status["running"] == 0
    assert judge.stats.model_calls == CLIENTS and max(server.batcher.batch_sizes) > 1
