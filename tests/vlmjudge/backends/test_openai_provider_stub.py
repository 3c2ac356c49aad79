"""The OpenAI backend against a stub of a hosted provider on loopback: the Batch API (files,
batches, polling, result download), servers without logprobs, and refused requests."""
import json
import math
import threading
from email.parser import BytesParser
from email.policy import default as email_policy
from http.server import BaseHTTPRequestHandler

import pytest
from openai_stub import stub_client, stub_server

from vlmjudge import Request
from vlmjudge.backends.openai import OpenAIRequestError


def _user_text(body):
    last_user = [m for m in body["messages"] if m["role"] == "user"][-1]
    content = last_user["content"]
    return content if isinstance(content, str) else " ".join(p["text"] for p in content if p["type"] == "text")


def _completion(body):
    """What the stub's 'model' answers: an echo, or fixed first-token logprobs."""
    text = _user_text(body)
    if body.get("logprobs") and "no-logprobs" not in text:
        top = [{"token": "Yes", "logprob": math.log(0.6)}, {"token": "No", "logprob": math.log(0.3)},
               {"token": "Maybe", "logprob": math.log(0.1)}]  # no prefix: an option is the bare word
        return {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "Yes"},
                             "logprobs": {"content": [{"token": "Yes", "logprob": math.log(0.6), "top_logprobs": top}]}}]}
    content = "No, it is not." if "no-logprobs" in text else f"echo: {text}"
    return {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content},
                         "logprobs": None}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


class Provider:
    """Files, batches and chat completions, in memory."""

    def __init__(self):
        self.files, self.batches, self.polls, self.chat_calls = {}, {}, {}, 0
        self.rate_limit_next = 0
        self.lock = threading.Lock()

    def upload(self, data, purpose):
        fid = f"file-{len(self.files)}"
        self.files[fid] = data
        return {"id": fid, "object": "file", "bytes": len(data), "created_at": 0, "filename": "in.jsonl",
                "purpose": purpose, "status": "processed"}

    def create_batch(self, spec):
        bid = f"batch-{len(self.batches)}"
        self.batches[bid] = {"id": bid, "object": "batch", "endpoint": spec["endpoint"], "created_at": 0,
                             "input_file_id": spec["input_file_id"], "completion_window": spec["completion_window"],
                             "status": "validating"}
        self.polls[bid] = 0
        return self.batches[bid]

    def poll(self, bid):
        """in_progress at the first poll, completed at the second (results written then)."""
        batch = self.batches[bid]
        self.polls[bid] += 1
        if self.polls[bid] == 1:
            batch["status"] = "in_progress"
        elif batch["status"] != "completed":
            ok, bad = [], []
            for line in self.files[batch["input_file_id"]].decode().splitlines():
                row = json.loads(line)
                assert row["method"] == "POST" and row["url"] == "/v1/chat/completions"
                if "FAIL" in _user_text(row["body"]):
                    bad.append({"id": "r", "custom_id": row["custom_id"], "response": None,
                                "error": {"code": "server_error", "message": "boom"}})
                else:
                    ok.append({"id": "r", "custom_id": row["custom_id"], "error": None,
                               "response": {"status_code": 200, "body": _completion(row["body"])}})
            ok.reverse()  # results come back in any order: matching must use custom_id
            batch["output_file_id"] = self.upload("\n".join(map(json.dumps, ok)).encode(), "batch_output")["id"]
            if bad:
                batch["error_file_id"] = self.upload("\n".join(map(json.dumps, bad)).encode(), "batch_output")["id"]
            batch["status"] = "completed"
        return batch


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        """Quiet."""

    def _send(self, status, payload, raw=None, headers=()):
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        p = self.server.provider
        parts = self.path.strip("/").split("/")
        if parts[:2] == ["v1", "batches"]:
            return self._send(200, p.poll(parts[2]))
        if parts[:2] == ["v1", "files"] and parts[3:] == ["content"]:
            return self._send(200, None, raw=p.files[parts[2]])
        self._send(404, {"error": {"message": "no route"}})

    def do_POST(self):
        p = self.server.provider
        data = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/files":
            head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
            form = BytesParser(policy=email_policy).parsebytes(head + data)
            fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                      for part in form.iter_parts()}
            return self._send(200, p.upload(fields["file"], fields["purpose"].decode()))
        body = json.loads(data)
        if self.path == "/v1/batches":
            return self._send(200, p.create_batch(body))
        if self.path == "/v1/chat/completions":
            with p.lock:
                p.chat_calls += 1
                limited = p.rate_limit_next > 0
                p.rate_limit_next -= limited
            if limited:
                return self._send(429, {"error": {"message": "slow down"}}, headers=[("Retry-After", "0.05")])
            if body["model"] == "forbidden-model":
                return self._send(403, {"error": {"message": "no access to this model"}})
            return self._send(200, _completion(body))
        self._send(404, {"error": {"message": "no route"}})


@pytest.fixture
def provider(monkeypatch):
    with stub_server(_Handler, monkeypatch, provider=Provider()) as (server, url):
        yield server.provider, url


def test_batch_api_round_trip_matches_results_by_custom_id(provider):
    stub, url = provider
    judge = stub_client(url, batch_api=True, batch_poll_s=0.01)
    texts = ["first", "second", "FAIL here", "fourth", "fifth"]
    answers = judge.generate([Request(text=t) for t in texts])
    assert [a.text for a in answers] == ["echo: first", "echo: second", "", "echo: fourth", "echo: fifth"]
    assert [a.finish_reason for a in answers] == ["stop", "stop", "error", "stop", "stop"]
    assert len(stub.batches) == 1 and stub.polls["batch-0"] == 2 and stub.chat_calls == 0
    lines = [json.loads(x) for x in stub.files["file-0"].decode().splitlines()]
    assert len({row["custom_id"] for row in lines}) == 5
    assert judge.counters["batch_jobs"] == 1 and judge.counters["failed_requests"] == 1
    assert judge.stats.generated_tokens == 4 * 3


def test_batch_api_choice_probs_with_fallback_batch(provider):
    _, url = provider
    judge = stub_client(url, batch_api=True, batch_poll_s=0.0)
    probs = judge.choice_probs([Request(text="is it?"), Request(text="no-logprobs please")], ["Yes", "No"])
    assert probs[0] == pytest.approx({"Yes": 0.6 / 0.9, "No": 0.3 / 0.9})  # Maybe is dropped
    assert probs[0].mass == pytest.approx(0.9) and not probs[0].truncated
    assert probs[1] == {"Yes": 0.0, "No": 1.0}  # no logprobs: generated "No, ..." read as the option
    assert judge.counters["choice_probs_fallbacks"] == 1 and judge.counters["batch_jobs"] == 2


def test_live_fallback_rate_limit_and_refusal(provider):
    stub, url = provider
    judge = stub_client(url)
    stub.rate_limit_next = 2  # two 429s with Retry-After, then answers
    probs = judge.choice_probs([Request(text="is it?"), Request(text="no-logprobs")], ["Yes", "No"])
    assert probs == [pytest.approx({"Yes": 2 / 3, "No": 1 / 3}), {"Yes": 0.0, "No": 1.0}]
    assert judge.counters["retries"] == 2 and judge.counters["choice_probs_fallbacks"] == 1
    assert judge.manifest()["choice_probs_fallbacks"] == 1
    with pytest.raises(OpenAIRequestError, match="403.*no access"):
        stub_client(url, model="forbidden-model").generate([Request(text="hi")])
