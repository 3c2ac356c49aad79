"""Replies whose fields cannot be used: each fails its one request, counted in
`malformed_responses` (stats and manifest) with a warning naming the field; the run goes on, and
nothing is guessed, cached or read as far as it goes. Probabilities above 1 are counted in the
manifest as in the stats."""
import copy
import json
import math

import pytest
from PIL import Image
from openai_stub import canned, chat_stub, make_requests, stub_client

from vlmjudge import ResponseCache
from vlmjudge.backends.openai.replies import MalformedResponse, answer_from, first_token_alternatives


def _spoiled(field_path, value):
    """An `answer` for the stub that sets `field_path` (keys and indices) to `value` in the reply
    to the first question ("Question 0") only."""
    def answer(body):
        out = canned(body)
        if "Question 0" not in str(body["messages"]):
            return out
        target = out
        for key in field_path[:-1]:
            target = target[key]
        target[field_path[-1]] = value
        return out
    return answer


GENERATE_CASES = {
    "content 42": (("choices", 0, "message", "content"), 42, "choices[0].message.content is int 42"),
    "content list": (("choices", 0, "message", "content"), [{"type": "text", "text": "Yes"}],
                     "choices[0].message.content is list"),
    "completion_tokens abc": (("usage", "completion_tokens"), "abc", "usage.completion_tokens is str 'abc'"),
    "prompt_tokens -1": (("usage", "prompt_tokens"), -1, "usage.prompt_tokens is int -1"),
    "finish_reason 7": (("choices", 0, "finish_reason"), 7, "choices[0].finish_reason is int 7"),
    "error beside choices": (("error",), {"message": "overloaded"}, "both `error`"),
    "two choices": (("choices", 1), {"index": 1, "message": {"content": "No"}}, "2 choices; one was asked"),
}


@pytest.mark.parametrize("case", GENERATE_CASES)
def test_a_malformed_answer_fails_its_request_only(monkeypatch, tmp_path, caplog, case):
    path, value, named = GENERATE_CASES[case]
    if path == ("choices", 1):  # appended, not set
        def answer(body, _extra=value):
            out = canned(body)
            if "Question 0" in str(body["messages"]):
                out["choices"].append(copy.deepcopy(_extra))
            return out
    else:
        answer = _spoiled(path, value)
    cache = tmp_path / "answers.sqlite"
    requests = make_requests(6)  # questions 0, 1, 2 twice over
    with chat_stub(monkeypatch, answer=answer) as (server, url):
        judge = stub_client(url, cache=cache, concurrency=2)
        answers = judge.generate(requests)
    failed = [i for i, a in enumerate(answers) if not a.ok]
    assert failed == [0, 3] and all(answers[i].text == "" for i in failed)
    assert all(isinstance(a.text, str) and a.text.startswith("echo 1: Question") for a in answers if a.ok)
    assert judge.stats.malformed_responses == 2 == judge.manifest()["malformed_responses"]
    assert judge.counters["failed_requests"] == 2 and judge.counters["retries"] == 0  # not retried
    assert len(server.bodies) == 6 and len(ResponseCache(cache)) == 4  # failures never cached
    assert named in caplog.text


PROBS_CASES = {
    "logprob abc": ("abc", "top_logprobs[0].logprob is str 'abc'"),
    "logprob above 0": (0.5, "top_logprobs[0].logprob is 0.5: above 0"),
    "logprob NaN": (float("nan"), "top_logprobs[0].logprob is float nan"),
    "logprob true": (True, "top_logprobs[0].logprob is bool True"),
}


@pytest.mark.parametrize("case", PROBS_CASES)
@pytest.mark.parametrize("normalize", [True, False])
def test_a_malformed_logprob_fails_its_request_never_a_fallback(monkeypatch, caplog, case, normalize):
    value, named = PROBS_CASES[case]

    def answer(body):
        out = canned(body)
        if "Question 0" in str(body["messages"]):
            out["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] = value
        return out
    with chat_stub(monkeypatch, answer=answer) as (_, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(make_requests(3), ["Yes", "No"], normalize=normalize)
    assert probs[0] == {} and all(probs[1:])
    assert judge.counters["choice_probs_fallbacks"] == 0  # a malformed reply is not a server without logprobs
    assert judge.manifest()["malformed_responses"] == 1 and judge.counters["failed_requests"] == 1
    assert named in caplog.text


@pytest.mark.parametrize("normalize", [True, False])
def test_probabilities_above_1_are_counted_in_the_manifest(monkeypatch, normalize):
    """Each logprob is valid alone; together " Yes" and " No" hold 0.9 + 0.8 = 1.7."""
    def answer(body):
        out = canned(body)
        top = out["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        top[0]["logprob"], top[1]["logprob"] = math.log(0.9), math.log(0.8)
        return out
    with chat_stub(monkeypatch, answer=answer) as (_, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(make_requests(2), ["Yes", "No"], normalize=normalize)
    assert probs == [{}, {}]
    assert judge.stats.invalid_answers == 2 == judge.manifest()["invalid_answers"]


def test_the_readers_name_the_field():
    ok = canned({"model": "m", "messages": [{"role": "user", "content": "q"}]})
    assert answer_from(ok, 8).text == "echo 0: q"
    with pytest.raises(MalformedResponse, match=r"usage is str"):
        answer_from({**ok, "usage": "lots"}, 8)
    with pytest.raises(MalformedResponse, match=r"choices\[0\]\.message is list"):
        answer_from({"choices": [{"message": ["Yes"]}]}, 8)
    with pytest.raises(MalformedResponse, match=r"content\[0\]\.top_logprobs\[1\]\.token is int 5"):
        first_token_alternatives({"choices": [{"logprobs": {"content": [
            {"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1},
                                                                {"token": 5, "logprob": -1.0}]}]}}]})
    assert first_token_alternatives({"choices": [{"logprobs": {"content": [
        {"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "No", "logprob": -math.inf}]}]}}]}) \
        == [("No", -math.inf)]  # probability 0 is a probability


def test_content_42_no_longer_crashes_the_cli_and_its_manifest_counts_it(monkeypatch, tmp_path, capsys):
    """`terravis score` over a server answering 42: failed records, a manifest counting them (and
    the bounds its flags set)."""
    from vlmjudge.cli import main as vlmjudge_main
    from vlmjudge.outputs import read_manifest

    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(2):
        Image.new("RGB", (64, 64), (100 * i, 20, 20)).save(folder / f"{i}.png")
    out = tmp_path / "run" / "records.jsonl"
    def answer(body):
        reply = canned(body)
        reply["choices"][0]["message"]["content"] = 42
        return reply
    with chat_stub(monkeypatch, answer=answer) as (_, url):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
        code = vlmjudge_main(["terravis", "score", str(folder), "--model", "stub-model", "--quiet", "--no-cache",
                              "--base-url", url, "--decision", "generate", "--out", str(out),
                              "--request-timeout", "5", "--max-response-bytes", "2000000"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and code != 1
    assert [json.loads(line)["status"] for line in out.read_text().splitlines()] == ["failed", "failed"]
    manifest = read_manifest(out)
    assert manifest["malformed_responses"] == 2 == manifest["failed_requests"]
    assert manifest["timeout_s"] == 5 and manifest["max_response_bytes"] == 2_000_000


@pytest.mark.parametrize("flags, said", [
    (["--backend", "replay", "--max-response-bytes", "10"], "--max-response-bytes bounds requests to a server"),
    (["--base-url", "http://127.0.0.1:9/v1", "--request-timeout", "0"], "finite number of seconds above 0"),
    (["--base-url", "http://127.0.0.1:9/v1", "--request-timeout", "inf"], "finite number of seconds above 0"),
    (["--base-url", "http://127.0.0.1:9/v1", "--max-response-bytes", "1e6"], "not a whole number of bytes"),
])
def test_the_bound_flags_refuse_what_they_cannot_use(tmp_path, capsys, flags, said):
    from vlmjudge.cli import main as vlmjudge_main

    image = tmp_path / "a.png"
    Image.new("RGB", (64, 64)).save(image)
    try:
        code = vlmjudge_main(["terravis", "score", str(image), "--model", str(tmp_path / "answers.jsonl"),
                              "--quiet", "--out", str(tmp_path / "r.jsonl"), *flags])
    except SystemExit as stopped:  # argparse's refusal
        code = stopped.code
    err = capsys.readouterr().err
    assert code == 2 and said in err and "Traceback" not in err
