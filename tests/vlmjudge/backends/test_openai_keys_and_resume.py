"""The API key reaches the server and nowhere else (cache, logs, results, manifest, pickle, errors);
a refused key raises naming its variable; a client killed mid-run resumes from its cache, sending
only the unfinished requests."""
import glob
import json
import logging
import pickle
import secrets
import subprocess
import sys
from pathlib import Path

import openai_client_worker
import pytest
from openai_stub import FAULTS, STUB_KEY_ENV, chat_stub, make_requests, stub_client

from vlmjudge import ResponseCache
from vlmjudge.backends.openai import OpenAIKeyError

WORKER = str(Path(openai_client_worker.__file__))


def test_api_key_is_sent_but_never_recorded(tmp_path, monkeypatch, caplog, capfd):
    key = "sk-test-" + secrets.token_hex(16)
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    requests = make_requests(8)
    cache = tmp_path / "cache.sqlite"
    with chat_stub(monkeypatch, key=key, faults=FAULTS + ("server_error",) * 3, delay_s=1.0) as (server, url):
        monkeypatch.setenv(STUB_KEY_ENV, key)
        judge = stub_client(url, cache=cache, timeout_s=0.5, max_retries=2, concurrency=1)
        results = judge.generate(requests)
        probs = judge.choice_probs(requests[:3], ["Yes", "No"])
        monkeypatch.setenv(STUB_KEY_ENV, key[::-1])
        wrong = stub_client(url)
        with pytest.raises(OpenAIKeyError, match=f"401.*{STUB_KEY_ENV}") as refused:
            wrong.generate(requests[:1])
    assert f"Bearer {key}" in server.auth  # the key was sent
    assert sum(a.ok for a in results) < 8 and all(probs)  # one request failed: the failure path logged
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


def test_killed_client_reruns_only_unfinished_requests(tmp_path, monkeypatch):
    n, cache = 15, tmp_path / "client.sqlite"
    requests = make_requests(n)
    with chat_stub(monkeypatch) as (server, url):
        proc = subprocess.run([sys.executable, WORKER, url, str(cache), "3", str(n)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == -9, proc.stderr  # SIGKILL at the start of its fourth chunk of three
        first_run = len(server.bodies)
        assert first_run == 9 and len(ResponseCache(cache)) == 9
        rerun = stub_client(url, cache=cache, batch_size=3)
        answers = rerun.generate(requests)
    assert rerun.stats.cache_hits == 9 and rerun.stats.model_calls == 6
    assert len(server.bodies) - first_run == 6  # the server saw only the unfinished six
    assert all(a.ok and a.text.startswith("echo 1: Question") for a in answers)
