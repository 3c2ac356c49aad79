import subprocess
import sys
import time
from pathlib import Path

from PIL import Image

from vlmjudge import Request, load_judge
from vlmjudge.cache import ResponseCache, cache_key

import cache_worker

WORKER = str(Path(cache_worker.__file__))


def replay(cache, **kw):
    return load_judge(cache_worker.answers(), backend="replay", key_fields=("item_id",), cache=cache, **kw)


def test_second_run_makes_no_model_calls(tmp_path):
    path = tmp_path / "r.sqlite"
    first = replay(path, batch_size=4)
    texts = [a.text for a in first.generate(cache_worker.requests())]
    assert first.stats.model_calls == 20
    second = replay(path, batch_size=4)
    assert [a.text for a in second.generate(cache_worker.requests())] == texts
    assert second.stats.model_calls == 0 and second.stats.cache_hits == 20


def test_killed_run_resumes_without_repeating_finished_requests(tmp_path):
    path = tmp_path / "r.sqlite"
    proc = subprocess.run([sys.executable, WORKER, "die", str(path), "5"], capture_output=True, text=True)
    assert proc.returncode != 0  # it was killed at its sixth chunk of two
    assert len(ResponseCache(path)) == 10
    rerun = replay(path, batch_size=2)
    out = rerun.generate(cache_worker.requests())
    assert rerun.stats.model_calls == 10 and rerun.stats.cache_hits == 10
    assert [a.text for a in out] == [f"answer {i}" for i in range(20)]


def test_two_processes_writing_one_file_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.sqlite")  # fresh: the processes also race to create it
    workers = (0, 1, 2)
    start_at = str(time.time() + 5)
    procs = [subprocess.Popen([sys.executable, WORKER, "write", path, str(w), "300", start_at]) for w in workers]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(workers)
    cache = ResponseCache(path)
    assert len(cache) == 300 * len(workers) + 300
    keys = [f"w{w}-{i}" for w in workers for i in range(300)]
    assert len(cache.get_many(keys)) == 300 * len(workers)


def test_generate_and_choice_probs_never_collide(tmp_path):
    path = tmp_path / "r.sqlite"
    judge = load_judge({0: "Yes it is", 1: "No"}, backend="replay", key_fields=("item_id",), cache=path)
    reqs = cache_worker.requests()[:2]
    texts = judge.generate(reqs)
    probs = judge.choice_probs(reqs, ["Yes", "No"])
    again = load_judge({0: "zzz", 1: "zzz"}, backend="replay", key_fields=("item_id",), cache=path)
    assert [a.text for a in again.generate(reqs)] == [a.text for a in texts]
    assert again.choice_probs(reqs, ["Yes", "No"]) == probs
    assert again.stats.model_calls == 0 and len(ResponseCache(path)) == 4
    ident = judge.identity()
    h = reqs[0].content_hash()
    keys = {cache_key(ident, "generate", h), cache_key(ident, "choice_probs", h, ["Yes", "No"]),
            cache_key(ident, "choice_probs", h, ["No", "Yes"]),
            cache_key({**ident, "revision": "abc"}, "generate", h)}
    assert len(keys) == 4


def test_failed_answers_are_not_cached(tmp_path):
    path = tmp_path / "r.sqlite"
    req = [Request(images=[Image.new("RGB", (4, 4))], text="q", meta={"item_id": 0})]
    judge = load_judge({0: [None, "Yes"]}, backend="replay", key_fields=("item_id",), cache=path)
    assert judge.generate(req)[0].finish_reason == "error"
    assert judge.generate(req)[0].text == "Yes"
    assert judge.stats.model_calls == 2 and len(ResponseCache(path)) == 1


def test_cache_pickles_as_its_path(tmp_path):
    import pickle
    cache = ResponseCache(tmp_path / "p.sqlite")
    cache.put_many([("k", {"v": 1})])
    assert pickle.loads(pickle.dumps(cache)).get_many(["k"]) == {"k": {"v": 1}}
