"""Subprocess side of the cache tests: a run that dies mid-way, concurrent writers, and a process
that holds the file's write lock (or, "exclusive", every lock) until a line arrives on its stdin."""
import os
import signal
import sys
import time

from PIL import Image

from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.cache import ResponseCache
from vlmjudge.requests import Request

N = 20


def requests():
    return [Request(images=[Image.new("RGB", (4, 4), (i, i, 0))], text="Is it dark?", meta={"item_id": i})
            for i in range(N)]


class DyingJudge(ReplayJudge):
    """Killed (SIGKILL: no cleanup, no flush) when it starts chunk number `die_at`."""

    def __init__(self, *a, die_at=None, **kw):
        super().__init__(*a, **kw)
        self.die_at, self.chunks = die_at, 0

    def _generate(self, chunk):
        if self.die_at is not None and self.chunks == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        self.chunks += 1
        return super()._generate(chunk)


def answers():
    return {i: f"answer {i}" for i in range(N)}


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "die":
        judge = DyingJudge(answers(), key_fields=("item_id",), batch_size=2, cache=path, die_at=int(sys.argv[3]))
        judge.generate(requests())
    elif mode == "write":
        worker, count, start_at = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
        time.sleep(max(0.0, start_at - time.time()))  # all workers open the fresh file at once
        cache = ResponseCache(path)
        for i in range(count):
            cache.put_many([(f"w{worker}-{i}", {"i": i, "worker": worker}), (f"shared-{i}", {"i": i})])
    elif mode == "hold":
        import sqlite3
        conn = sqlite3.connect(path, isolation_level=None)
        if sys.argv[3:] == ["exclusive"]:  # readers are shut out too
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            conn.execute("BEGIN EXCLUSIVE")
        else:
            conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR REPLACE INTO responses (key, value) VALUES ('held', '1')")
        print("holding", flush=True)
        sys.stdin.readline()
        conn.execute("COMMIT")
        conn.close()
