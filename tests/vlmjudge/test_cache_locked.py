"""Issue 50, item 7, and the read-only cache: a second process holds the cache file's lock, and no
answer computed meanwhile is lost (they wait beside the file, served at once and moved in by the next
run that can write it), the warning names where and who holds the lock; a file that cannot be opened
or written says what to do with it, never to delete a good cache."""
from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import cache_worker
from vlmjudge import load_judge
from vlmjudge.cache import CacheFileError, CacheLockedError, CacheReadOnlyError, ResponseCache
from vlmjudge.cache_aside import aside_path, lock_holder

WORKER = str(Path(cache_worker.__file__))


def fresh_cache(path: Path) -> str:
    """A cache file with its table, closed: what an earlier run leaves."""
    ResponseCache(path).close()
    return str(path)


@contextmanager
def held(path: str, *how: str):
    """A second process holding the file's write lock (or every lock, with "exclusive") until the block ends."""
    holder = subprocess.Popen([sys.executable, WORKER, "hold", path, *how], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        yield holder
    finally:
        holder.stdin.write("release\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0


def replay(cache):
    return load_judge(cache_worker.answers(), backend="replay", key_fields=("item_id",), cache=cache, batch_size=4)


def test_answers_computed_while_another_process_holds_the_lock_are_kept_and_moved_in_later(tmp_path, caplog):
    path = fresh_cache(tmp_path / "answers.sqlite")
    with held(path) as holder, caplog.at_level(logging.WARNING, logger="vlmjudge.cache"):
        cache = ResponseCache(path, timeout_s=0.5)
        judge = replay(cache)
        texts = [a.text for a in judge.generate(cache_worker.requests())]
        assert texts == [f"answer {i}" for i in range(cache_worker.N)] and judge.stats.model_calls == 20
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings  # one line, however many chunks went aside
        assert f"is locked by pid {holder.pid} (" in warnings[0] and "cache_worker.py hold" in warnings[0]
        assert aside_path(path) in warnings[0] and "(waited 0.5 s)" in warnings[0]
        kept = [json.loads(line) for line in Path(aside_path(path)).read_text().splitlines()]
        assert len(kept) == 20 and {row["value"]["text"] for row in kept} == set(texts)
        again = replay(cache)  # the same run asks again: served from the answers set aside
        assert [a.text for a in again.generate(cache_worker.requests())] == texts
        assert again.stats.model_calls == 0
        assert len(cache) == 0  # the file itself got none of them
    rerun = replay(tmp_path / "answers.sqlite")  # the lock is gone: opening moves them in
    assert [a.text for a in rerun.generate(cache_worker.requests())] == texts
    assert rerun.stats.model_calls == 0 and rerun.stats.resumed_from_cache == 20
    assert not os.path.exists(aside_path(path)) and len(ResponseCache(path)) == 21  # and the holder's row


def test_a_later_write_that_finds_the_file_free_moves_the_aside_answers_in(tmp_path):
    path = fresh_cache(tmp_path / "answers.sqlite")
    cache = ResponseCache(path, timeout_s=0.2)
    with held(path):
        cache.put_many([("k1", {"v": 1})])
        cache.put_many([("k2", {"v": 2})])  # within the retry wait: straight aside
        assert len(Path(aside_path(path)).read_text().splitlines()) == 2
    time.sleep(1.1)  # past the first retry wait (1 s)
    cache.put_many([("k3", {"v": 3})])
    assert not os.path.exists(aside_path(path))
    assert ResponseCache(path).get_many(["k1", "k2", "k3"]) == {"k1": {"v": 1}, "k2": {"v": 2}, "k3": {"v": 3}}


def test_the_lock_holder_is_named_by_pid_and_command(tmp_path):
    path = fresh_cache(tmp_path / "answers.sqlite")
    if not os.path.exists("/proc/locks"):
        pytest.skip("no kernel lock table to read on this system")
    with held(path) as holder:
        assert lock_holder(path).startswith(f"pid {holder.pid} (") and "cache_worker.py hold" in lock_holder(path)
    assert lock_holder(path).startswith("another connection")  # let go: no holder to name


def test_a_cache_locked_even_for_reading_is_one_error_naming_its_holder(tmp_path):
    path = fresh_cache(tmp_path / "answers.sqlite")
    with held(path, "exclusive") as holder:
        with pytest.raises(CacheLockedError) as caught:
            ResponseCache(path, timeout_s=0.3)
    message = str(caught.value)
    assert f"locked by pid {holder.pid}" in message or "locked by another" in message
    assert "--cache" in message and "--no-cache" in message and "delete" not in message
    assert len(message.splitlines()) == 1


def test_a_read_only_cache_is_refused_at_once_with_how_to_reuse_it(tmp_path, monkeypatch):
    path = fresh_cache(tmp_path / "answers.sqlite")
    ResponseCache(path).put_many([("k", {"v": 1})])
    real_connect = sqlite3.connect

    def read_only(database, *args, **kwargs):  # what a chmod 444 file or a read-only mount gives
        return real_connect(f"file:{database}?mode=ro", *args, uri=True, **kwargs)

    monkeypatch.setattr("vlmjudge.cache.sqlite3.connect", read_only)
    with pytest.raises(CacheReadOnlyError) as caught:
        ResponseCache(path)
    message = str(caught.value)
    assert "cannot be written" in message and "intact" in message and f"chmod u+w {path}" in message
    assert "--cache" in message and "--no-cache" in message
    assert "delete" not in message and "mv " not in message and "broken" not in message
    monkeypatch.undo()
    assert ResponseCache(path).get_many(["k"]) == {"k": {"v": 1}}  # the good cache is untouched


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes a chmod 444 file anyway")
def test_a_chmod_444_cache_is_read_only_not_broken(tmp_path):
    path = fresh_cache(tmp_path / "answers.sqlite")
    os.chmod(path, 0o444)
    with pytest.raises(CacheReadOnlyError):
        ResponseCache(path)


def test_a_folder_given_as_the_cache_is_named_as_one(tmp_path):
    with pytest.raises(CacheFileError) as caught:
        ResponseCache(tmp_path)
    assert "is a folder, not a file" in str(caught.value) and "delete" not in str(caught.value)
    (tmp_path / "plain").write_text("x")
    with pytest.raises(CacheFileError) as caught:
        ResponseCache(tmp_path / "plain" / "answers.sqlite")
    assert "cannot be made" in str(caught.value)


def test_an_aside_file_cut_short_keeps_its_whole_lines_and_refuses_a_foreign_one(tmp_path, caplog):
    path = fresh_cache(tmp_path / "answers.sqlite")
    Path(aside_path(path)).write_text('{"key": "k1", "value": {"v": 1}}\n{"key": "k2", "val')
    with caplog.at_level(logging.WARNING, logger="vlmjudge.cache"):
        cache = ResponseCache(path)
    assert cache.get_many(["k1", "k2"]) == {"k1": {"v": 1}} and not os.path.exists(aside_path(path))
    assert any("cut short" in r.getMessage() for r in caplog.records)
    Path(aside_path(path)).write_text('{"key": "k3", "value": {"v": 3}}\n["not", "an", "answer"]\n')
    with pytest.raises(CacheFileError) as caught:
        ResponseCache(path)
    assert f"{aside_path(path)}:2 is not an answer" in str(caught.value)
    assert os.path.exists(aside_path(path))  # nothing moved, nothing lost
