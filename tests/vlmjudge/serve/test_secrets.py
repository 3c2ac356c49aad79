"""The API key reaches the server and nowhere else: not the cache, logs, results or manifest."""
import glob
import json
import logging
import pickle
import secrets

import pytest
from serving_support import MODEL, client_kwargs, make_requests, recorded, start_server

from vlmjudge import load_judge
from vlmjudge.serve import FaultInjector
from vlmjudge.backends.openai import OpenAIRequestError
from vlmjudge.backends.replay import ReplayJudge

KEY_ENV = "VLMJUDGE_TEST_SERVING_KEY"


def test_api_key_is_sent_but_never_recorded(tmp_path, monkeypatch, caplog, capfd):
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    requests = make_requests(8)
    answers = recorded(requests)
    answers[requests[3].content_hash()] = None  # one request fails: the failure path logs too
    cache = tmp_path / "cache.sqlite"
    faults = FaultInjector(0.3, seed=5, delay_s=1.0)
    with start_server(ReplayJudge(answers, model_id=MODEL), api_key=key, faults=faults) as server:
        judge = load_judge(MODEL, backend="openai", api_key_env=KEY_ENV, cache=cache,
                           **client_kwargs(server, timeout_s=0.5, max_retries=6))
        results = judge.generate(requests)
        probs = judge.choice_probs(requests[:3], ["Yes", "No"])
        monkeypatch.setenv(KEY_ENV, key[::-1])
        wrong = load_judge(MODEL, backend="openai", api_key_env=KEY_ENV, **client_kwargs(server))
        with pytest.raises(OpenAIRequestError, match="401") as refused:
            wrong.generate(requests[:1])
    assert sum(a.ok for a in results) == 7 and all(probs)  # the key worked (the server checks it)
    assert sum(faults.counts.values()) > 0 and judge.counters["retries"] > 0

    out, err = capfd.readouterr()
    haystacks = {
        "logs": caplog.text + "".join(str(r.args) for r in caplog.records),
        "stdout/stderr": out + err,
        "results": json.dumps([a.to_json() for a in results] + probs),
        "manifest": json.dumps(judge.manifest()) + json.dumps(wrong.manifest()),
        "repr": repr(judge) + repr(vars(judge).keys()),
        "pickle": pickle.dumps(judge).decode("latin-1"),
        "error": str(refused.value),
    }
    files = glob.glob(str(cache) + "*")
    assert files
    for path in files:  # the database and its WAL
        with open(path, "rb") as fh:
            haystacks[path] = fh.read().decode("latin-1")
    assert "refused" in haystacks["error"] and "failed after" in haystacks["logs"]
    for where, text in haystacks.items():
        assert key not in text, f"API key found in {where}"
        assert key[::-1] not in text, f"wrong API key found in {where}"
