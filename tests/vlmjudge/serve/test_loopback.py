"""The OpenAI-compatible backend against `vlmjudge serve` on loopback: faults, batching, errors."""
import json
import urllib.request

import pytest
from nested_close import assert_nested_close
from serving_support import (
    MODEL,
    RecordingJudge,
    client_kwargs,
    make_requests,
    recorded,
    replay_judge,
    start_server,
)

from vlmjudge import Constraint, Request, load_judge
from vlmjudge.serve.faults import FAULT_KINDS, FaultInjector
from vlmjudge.backends.openai import OpenAIRequestError


def test_injected_faults_change_nothing_in_the_results():
    requests = make_requests(30)
    with start_server(replay_judge(requests)) as clean:
        calm = load_judge(MODEL, backend="openai", **client_kwargs(clean))
        expected = [a.to_json() for a in calm.generate(requests)]
        expected_probs = calm.choice_probs(requests, ["Yes", "No"])
    assert calm.counters["retries"] == 0
    assert [a["text"] for a in expected] == [recorded(requests)[r.content_hash()]["text"] for r in requests]

    faults = FaultInjector(0.2, seed=3, delay_s=1.0)
    with start_server(replay_judge(requests), faults=faults) as flaky:
        client = load_judge(MODEL, backend="openai", **client_kwargs(flaky, timeout_s=0.5))
        got = [a.to_json() for a in client.generate(requests)]
        probs = client.choice_probs(requests, ["Yes", "No"])
    assert got == expected
    assert_nested_close(probs, expected_probs, abs_tol=1e-12)
    assert all(faults.counts[k] >= 1 for k in FAULT_KINDS), faults.counts  # every kind was met...
    assert client.counters["retries"] >= sum(faults.counts.values())  # ...and each cost a retry
    assert client.counters["failed_requests"] == 0 and client.stats.model_calls == 60


def test_choice_probs_over_http_equal_in_process():
    requests = make_requests(9)
    local = replay_judge(requests)
    with start_server(replay_judge(requests)) as server:
        remote = load_judge(MODEL, backend="openai", **client_kwargs(server))
        over_http = remote.choice_probs(requests, ["Yes", "No"])
    in_process = local.choice_probs(requests, ["Yes", "No"])
    for a, b in zip(over_http, in_process):
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-4 for k in a)
    assert over_http[0] == pytest.approx({"Yes": 1 / 7, "No": 6 / 7}, abs=1e-12)
    assert remote.counters["choice_probs_fallbacks"] == 0


def test_concurrent_requests_are_micro_batched():
    requests = make_requests(24)
    with start_server(replay_judge(requests), max_wait_s=0.05) as server:
        client = load_judge(MODEL, backend="openai", **client_kwargs(server, concurrency=8))
        client.generate(requests)
        sizes = list(server.batcher.batch_sizes)
    assert sum(sizes) == 24 and max(sizes) > 1 and len(sizes) < 24


def test_requests_cross_the_wire_unchanged():
    image_requests = make_requests(2)
    constrained = Request(images=image_requests[0].images, text="Rate it.", prefix="Score:",
                          constraint=Constraint.ebnf('root ::= "Yes" | "No"', first_options=["Yes", "No"]))
    two_images = Request(images=image_requests[0].images + image_requests[1].images,
                         messages=[{"role": "user", "content": [{"type": "text", "text": "Compare"},
                                                                 {"type": "image"}, {"type": "image"}]},
                                   {"role": "assistant", "content": "Left."},
                                   {"role": "user", "content": "Why?"}])
    sent = [*image_requests, constrained, two_images]
    recorder = RecordingJudge()
    with start_server(recorder) as server:
        load_judge(MODEL, backend="openai", **client_kwargs(server, concurrency=1)).generate(sent)
    assert [r.content_hash() for r in recorder.seen] == [r.content_hash() for r in sent]
    got = recorder.seen[2]
    assert got.constraint == constrained.constraint and got.prefix == "Score:"


def test_json_schema_goes_as_response_format():
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    request = Request(text="Rate.", constraint=Constraint.json_schema(schema, first_options=["A", "B"]))
    recorder = RecordingJudge()
    with start_server(recorder) as server:
        load_judge(MODEL, backend="openai", **client_kwargs(server)).generate([request])
    got = recorder.seen[0].constraint
    assert got.kind == "json_schema" and got.schema["properties"]["score"] == {"type": "integer"}
    assert got.first_options == ("A", "B")


def test_refused_requests_raise_clearly_and_server_errors_fail_the_request():
    requests = make_requests(3)
    answers = recorded(requests)
    answers[requests[1].content_hash()] = None  # the judge fails on this one every time
    from vlmjudge.backends.replay import ReplayJudge
    with start_server(ReplayJudge(answers, model_id=MODEL)) as server:
        wrong = load_judge("other-model", backend="openai", **client_kwargs(server))
        with pytest.raises(OpenAIRequestError, match="404.*not served here"):
            wrong.generate(requests[:1])
        client = load_judge(MODEL, backend="openai", **client_kwargs(server, max_retries=2))
        out = client.generate(requests)
    assert [a.finish_reason for a in out] == ["stop", "error", "stop"] and out[1].text == ""
    assert client.counters["failed_requests"] == 1 and client.counters["retries"] == 2


def test_plain_logprobs_are_unsupported_and_models_are_listed():
    with start_server(replay_judge(make_requests(1))) as server:
        body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                           "logprobs": True, "top_logprobs": 5}).encode()
        req = urllib.request.Request(server.url + "/v1/chat/completions", body,
                                     {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 400 and "unsupported" in err.value.read().decode()
        with urllib.request.urlopen(server.url + "/v1/models", timeout=5) as resp:
            assert json.load(resp)["data"][0]["id"] == MODEL
