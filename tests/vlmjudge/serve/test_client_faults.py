"""2xx bodies that are not a chat completion (truncated JSON, a proxy's HTML page) are
transient: the OpenAI client retries them, counts them, and ends with a fault-free run's records."""
import pytest
from serving_support import MODEL, client_kwargs, make_requests, replay_judge, start_server

from vlmjudge import load_judge
from vlmjudge.serve.faults import BODY_FAULTS, FaultInjector
from vlmjudge.wire import UnparseableResponse, completion_json


def test_truncated_and_html_200_bodies_are_retried_and_counted():
    requests = make_requests(24)
    with start_server(replay_judge(requests)) as clean:
        calm = load_judge(MODEL, backend="openai", **client_kwargs(clean))
        expected = [a.to_json() for a in calm.generate(requests)]
    faults = FaultInjector(0.4, seed=11, kinds=BODY_FAULTS)
    with start_server(replay_judge(requests), faults=faults) as flaky:
        client = load_judge(MODEL, backend="openai", **client_kwargs(flaky, max_retries=10))
        got = [a.to_json() for a in client.generate(requests)]
    injected = sum(faults.counts.values())
    assert all(faults.counts[k] >= 2 for k in BODY_FAULTS), faults.counts
    assert got == expected  # the run completed, with the records of a fault-free run
    assert client.stats.unparseable_responses == injected  # every bad body was seen as one...
    assert client.counters["retries"] == injected  # ...and retried, nothing else failed
    assert client.counters["failed_requests"] == 0
    assert client.stats.as_dict()["unparseable_responses"] == injected
    assert client.manifest()["unparseable_responses"] == injected
    assert client.manifest()["base_url"] == flaky.url + "/v1"


def test_a_server_that_only_sends_html_fails_the_request_after_the_last_retry():
    requests = make_requests(2)
    faults = FaultInjector(1.0, kinds=("html_body",))
    with start_server(replay_judge(requests), faults=faults) as proxy:
        client = load_judge(MODEL, backend="openai", **client_kwargs(proxy, max_retries=2))
        out = client.generate(requests)
    assert [a.finish_reason for a in out] == ["error", "error"]  # a failed Answer, never a guess
    assert client.stats.unparseable_responses == 6 and client.counters["retries"] == 4
    assert client.counters["failed_requests"] == 2


@pytest.mark.parametrize("raw", [b'{"id": "x", "choices": [{"index": 0, "mess', b"<html>Bad gateway</html>",
                                 b"", b"\xff\xfe{}", b"[1, 2]", b'{"choices": []}', b'{"error": "busy"}',
                                 b"[" * 100_000])
def test_completion_json_refuses_what_is_not_a_chat_completion(raw):
    with pytest.raises(UnparseableResponse):
        completion_json(raw)


def test_completion_json_reads_a_chat_completion():
    body = completion_json(b'{"choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}]}')
    assert body["choices"][0]["message"]["content"] == "Yes"
