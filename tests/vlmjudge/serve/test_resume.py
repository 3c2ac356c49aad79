"""A client killed mid-run resumes from its cache: only unfinished requests reach the server."""
import subprocess
import sys
from pathlib import Path

import serving_client_worker
from serving_support import (
    MODEL,
    client_kwargs,
    make_requests,
    recorded,
    replay_judge,
    start_server,
)

from vlmjudge import ResponseCache, load_judge

WORKER = str(Path(serving_client_worker.__file__))


def test_killed_client_reruns_only_unfinished_requests(tmp_path):
    n, cache = 15, tmp_path / "client.sqlite"
    requests = make_requests(n)
    server_judge = replay_judge(requests)
    with start_server(server_judge) as server:
        proc = subprocess.run([sys.executable, WORKER, server.url + "/v1", str(cache), "3", str(n)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == -9, proc.stderr  # SIGKILL at the start of its fourth chunk of three
        first_run = len(server_judge.log)
        assert first_run == 9 and len(ResponseCache(cache)) == 9
        rerun = load_judge(MODEL, backend="openai", cache=cache, **client_kwargs(server, batch_size=3))
        answers = rerun.generate(requests)
    assert rerun.stats.cache_hits == 9 and rerun.stats.model_calls == 6
    assert len(server_judge.log) - first_run == 6  # the server saw only the unfinished six
    resent = {r.content_hash() for _, r in server_judge.log[first_run:]}
    assert resent == {r.content_hash() for r in requests[9:]}
    expected = recorded(requests)
    assert [a.text for a in answers] == [expected[r.content_hash()]["text"] for r in requests]
