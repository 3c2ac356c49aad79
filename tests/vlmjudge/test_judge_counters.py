"""Cache hits are told apart: answers stored by an earlier run (resumed work) versus answers this
judge stored itself earlier in its own run (reuse within the run); `cache_hits` stays their sum."""
from vlmjudge import load_judge

import cache_worker


def replay(cache):
    return load_judge(cache_worker.answers(), backend="replay", key_fields=("item_id",), cache=cache, batch_size=4)


def test_a_first_run_asking_again_reuses_within_the_run(tmp_path):
    judge = replay(tmp_path / "r.sqlite")
    judge.generate(cache_worker.requests())
    judge.generate(cache_worker.requests()[:7])  # a later stage asking what an earlier one asked
    stats = judge.stats
    assert stats.model_calls == 20
    assert stats.reused_within_run == 7 and stats.resumed_from_cache == 0
    assert stats.cache_hits == 7


def test_a_rerun_resumes_from_the_cache(tmp_path):
    path = tmp_path / "r.sqlite"
    replay(path).generate(cache_worker.requests()[:12])
    rerun = replay(path)
    rerun.generate(cache_worker.requests())
    rerun.generate(cache_worker.requests()[15:])
    stats = rerun.stats
    assert stats.model_calls == 8
    assert stats.resumed_from_cache == 12  # stored by the first run
    assert stats.reused_within_run == 5   # the last five, stored by the rerun itself
    assert stats.cache_hits == stats.resumed_from_cache + stats.reused_within_run == 17
    assert {"cache_hits", "resumed_from_cache", "reused_within_run"} <= set(stats.as_dict())


def test_without_a_cache_nothing_is_counted_as_a_hit(tmp_path):
    judge = replay(None)
    judge.generate(cache_worker.requests())
    judge.generate(cache_worker.requests())
    assert judge.stats.model_calls == 40
    assert judge.stats.cache_hits == judge.stats.resumed_from_cache == judge.stats.reused_within_run == 0
