"""The openai backend over real HTTP to a loopback stub: every transport fault is retried and the
run ends with a fault-free run's answers; what never recovers fails the request (finish_reason
"error", counted), and a refusal raises. Faults against a real vLLM server: test_vllm_openai_server."""
import pytest
from openai_stub import FAULTS, canned, chat_stub, make_requests, stub_client

from vlmjudge.backends.openai import OpenAIRequestError
from vlmjudge.backends.openai.replies import UnparseableResponse, completion_json


def test_each_kind_of_fault_is_retried_and_changes_nothing(monkeypatch):
    requests = make_requests(12)
    with chat_stub(monkeypatch) as (_, url):
        calm = stub_client(url, concurrency=4)
        expected = [a.to_json() for a in calm.generate(requests)]
        expected_probs = calm.choice_probs(requests, ["Yes", "No"])
    assert calm.counters["retries"] == 0 and expected[0]["text"].startswith("echo 1: Question 0")
    with chat_stub(monkeypatch, faults=FAULTS, delay_s=1.0) as (server, url):
        client = stub_client(url, concurrency=4, timeout_s=0.5, max_retries=8)
        got = [a.to_json() for a in client.generate(requests)]
        probs = client.choice_probs(requests, ["Yes", "No"])
    assert got == expected and probs == expected_probs
    assert not server.faults  # every fault was served...
    assert client.counters["retries"] == len(FAULTS)  # ...and each cost one retry
    assert client.stats.unparseable_responses == 2  # the truncated and the HTML body
    assert client.counters["failed_requests"] == 0 and client.manifest()["unparseable_responses"] == 2
    assert probs[0] == pytest.approx({"Yes": 2 / 3, "No": 1 / 3})


def test_a_server_that_only_sends_html_fails_the_request_after_the_last_retry(monkeypatch):
    with chat_stub(monkeypatch, faults=["html_body"] * 6) as (_, url):
        client = stub_client(url, max_retries=2, concurrency=1)
        out = client.generate(make_requests(2))
    assert [a.finish_reason for a in out] == ["error", "error"] and out[0].text == ""  # never a guess
    assert client.stats.unparseable_responses == 6 and client.counters["retries"] == 4
    assert client.counters["failed_requests"] == 2


def test_a_refusal_raises_and_a_lasting_server_error_fails_only_its_request(monkeypatch):
    def answer(body):
        return 404 if body["model"] == "other-model" else canned(body)
    with chat_stub(monkeypatch, answer=answer, faults=["server_error"] * 3) as (_, url):
        client = stub_client(url, max_retries=2, concurrency=1)
        first = client.generate(make_requests(1))  # takes the three 500s
        rest = client.generate(make_requests(3))
        with pytest.raises(OpenAIRequestError, match="404.*not served here"):
            stub_client(url, model="other-model").generate(make_requests(1))
    assert first[0].finish_reason == "error" and [a.finish_reason for a in rest] == ["stop"] * 3
    assert client.counters["failed_requests"] == 1 and client.counters["retries"] == 2


def test_a_response_without_logprobs_falls_back_to_a_counted_one_hot(monkeypatch):
    def answer(body):
        out = canned({**body, "logprobs": False})
        out["choices"][0]["message"]["content"] = "No, it is not."
        return out
    with chat_stub(monkeypatch, answer=answer) as (server, url):
        client = stub_client(url, concurrency=1)
        probs = client.choice_probs(make_requests(1), ["Yes", "No"])
        raw = client.choice_probs(make_requests(1), ["Yes", "No"], normalize=False)
    assert probs == [{"Yes": 0.0, "No": 1.0}] and probs[0].mass is None  # nothing measured it
    assert client.counters["choice_probs_fallbacks"] == 1
    assert raw == [{}] and client.counters["failed_requests"] == 1  # raw: no stand-in for a probability


@pytest.mark.parametrize("raw", [b'{"id": "x", "choices": [{"index": 0, "mess', b"<html>Bad gateway</html>",
                                 b"", b"\xff\xfe{}", b"[1, 2]", b'{"choices": []}', b'{"error": "busy"}',
                                 b"[" * 100_000])
def test_completion_json_refuses_what_is_not_a_chat_completion(raw):
    with pytest.raises(UnparseableResponse):
        completion_json(raw)


def test_completion_json_reads_a_chat_completion():
    body = completion_json(b'{"choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}]}')
    assert body["choices"][0]["message"]["content"] == "Yes"
