"""The openai backend's request threads: one pool per judge, kept across calls.

Why kept: starting `concurrency` threads (128 for a local server) for every call cost a served
run's client more CPU than its requests' JSON and HTTP. Why marked: a call made from one of the
judge's own threads (a request that needs another) runs inline, where waiting on the pool it
occupies would stall; a call from any other thread, another judge's included, uses the pool.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")

#: The name of the judge's request threads, and the thread attribute naming the pool they belong to.
POOL_PREFIX, POOL_MARK = "vlmjudge-openai", "_vlmjudge_openai_pool"


class RequestThreads:
    """The threads of `OpenAIJudge` (mixed into it): it holds `concurrency`, `_lock`, `_pool` and
    `_in_this_process` (which drops a pool inherited through fork)."""

    concurrency: int
    _lock: threading.Lock
    _pool: ThreadPoolExecutor | None
    _in_this_process: Callable[[], None]

    def _parallel(self, order: list[int], one: Callable[[int], T]) -> dict[int, T]:
        """`one(i)` for every index, at most `concurrency` at a time, submitted in `order`: the
        requests of one shared prefix go out back to back, one burst, never mixed with others.
        Called from one of the judge's own threads it runs inline (a pool waiting on itself would stall)."""
        if self.concurrency == 1 or len(order) == 1 or self._in_own_thread():
            return {i: one(i) for i in order}
        futures = [(i, self._executor().submit(one, i)) for i in order]
        try:
            return {i: f.result() for i, f in futures}
        finally:
            for _, f in futures:
                f.cancel()

    def _executor(self) -> ThreadPoolExecutor:
        """The judge's request threads, started at its first call and kept; they end with the judge."""
        self._in_this_process()
        with self._lock:
            if self._pool is None:
                owner: list[weakref.ref] = []  # filled before the first thread starts (at the first submit)
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix=POOL_PREFIX,
                                                initializer=_mark_thread, initargs=(owner,))
                owner.append(weakref.ref(self._pool))
            return self._pool

    def _in_own_thread(self) -> bool:
        """Whether the caller is one of this judge's request threads."""
        mark = getattr(threading.current_thread(), POOL_MARK, None)
        return self._pool is not None and mark is not None and mark() is self._pool


def _mark_thread(owner: list[weakref.ref]) -> None:
    """A request thread's first act: note which judge's pool it belongs to (`_in_own_thread`)."""
    setattr(threading.current_thread(), POOL_MARK, owner[0])
