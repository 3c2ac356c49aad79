"""`vlmjudge serve` as its own process (replay judge, injected faults, a required key)."""
import os
import re
import signal
import subprocess
import sys

from serving_support import make_requests, recorded

from vlmjudge import Answer, load_judge
from vlmjudge.backends.replay import record_answers


def test_serve_subprocess_with_faults_answers_every_request(tmp_path, monkeypatch):
    requests = make_requests(12)
    expected = [recorded(requests)[r.content_hash()]["text"] for r in requests]
    answers_path = tmp_path / "answers.jsonl"
    record_answers(requests, [Answer(t) for t in expected], answers_path)
    monkeypatch.setenv("VLMJUDGE_TEST_CLI_KEY", "sk-cli-test")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vlmjudge.serve", "--model", str(answers_path), "--backend", "replay",
         "--served-model-name", "judge", "--port", "0", "--api-key-env", "VLMJUDGE_TEST_CLI_KEY",
         "--inject-faults", "0.25", "--fault-seed", "2", "--fault-delay-s", "1.0"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = None
        for _ in range(5):
            line = proc.stderr.readline()
            found = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the server did not announce its address"
        client = load_judge("judge", backend="openai", base_url=url, api_key_env="VLMJUDGE_TEST_CLI_KEY",
                            timeout_s=0.5, backoff_s=0.01, max_retries=8, concurrency=4)
        got = client.generate(requests)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert [a.text for a in got] == expected
    assert client.counters["retries"] > 0 and client.counters["failed_requests"] == 0
    assert proc.returncode == 0 and "stopped" in err


def test_base_url_flag_points_the_shared_judge_flags_at_a_server():
    import argparse

    import pytest
    from serving_support import MODEL, replay_judge, start_server

    from vlmjudge.backends.openai import OpenAIJudge
    from vlmjudge.cli.flags import add_judge_flags, judge_from_args

    requests = make_requests(2)
    parser = argparse.ArgumentParser()
    add_judge_flags(parser)
    with start_server(replay_judge(requests)) as server:
        args = parser.parse_args(["--model", MODEL, "--base-url", server.url + "/v1"])
        judge = judge_from_args(args)  # --backend left at its default: the URL implies openai
        assert isinstance(judge, OpenAIJudge) and judge.manifest()["base_url"] == server.url + "/v1"
        assert [a.text for a in judge.generate(requests)] == [recorded(requests)[r.content_hash()]["text"]
                                                              for r in requests]
    with pytest.raises(SystemExit, match="openai backend"):
        judge_from_args(parser.parse_args(["--model", "a.jsonl", "--backend", "replay", "--base-url", "http://h/v1"]))
