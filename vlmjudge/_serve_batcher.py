"""Micro-batching for `vlmjudge serve`: concurrent HTTP requests become batched judge calls.

Handler threads submit calls; one worker thread owns the judge. It takes the oldest
call, then gathers more of the same kind (same operation and options) that arrive
within `max_wait_s`, up to `max_batch`, and makes one `judge.generate` or
`judge.choice_probs` call for all of them. Calls of another kind wait for the next round.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any

from ._serve_parse import Call

log = logging.getLogger("vlmjudge.serve")

_STOP = object()


class MicroBatcher:
    """A queue and a worker thread in front of one judge."""

    def __init__(self, judge: Any, *, max_batch: int = 64, max_wait_s: float = 0.005) -> None:
        if max_batch < 1 or max_wait_s < 0:
            raise ValueError("max_batch must be >= 1 and max_wait_s >= 0")
        self.judge = judge
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        #: Sizes of the judge calls made, in order: how well requests were grouped.
        self.batch_sizes: list[int] = []
        self._queue: queue.Queue = queue.Queue()
        self._pending: deque[tuple[Call, Future]] = deque()
        self._worker = threading.Thread(target=self._loop, name="vlmjudge-serve-batcher", daemon=True)
        self._worker.start()

    def submit(self, call: Call) -> Future:
        """A future for the call's result (an Answer, or a probability dict)."""
        future: Future = Future()
        self._queue.put((call, future))
        return future

    def close(self) -> None:
        self._queue.put(_STOP)
        self._worker.join(timeout=10)

    def _loop(self) -> None:
        stopping = False
        while not stopping or self._pending:
            first = self._pending.popleft() if self._pending else self._queue.get()
            if first is _STOP:
                break
            group = [first]
            for item in list(self._pending):
                if len(group) < self.max_batch and item[0].group == first[0].group:
                    self._pending.remove(item)
                    group.append(item)
            deadline = time.monotonic() + self.max_wait_s
            while len(group) < self.max_batch:
                try:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                (group if item[0].group == first[0].group else self._pending).append(item)
            self._run(group)
        leftovers = list(self._pending)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                leftovers.append(item)
        for _, future in leftovers:
            future.set_exception(RuntimeError("server shutting down"))

    def _run(self, group: list[tuple[Call, Future]]) -> None:
        self.batch_sizes.append(len(group))
        try:
            results = self._call([c for c, _ in group])
        except Exception as exc:  # one bad request must not fail its neighbours: retry them alone
            if len(group) == 1:
                group[0][1].set_exception(exc)
                return
            log.warning("batched judge call failed (%s); answering its %d requests one by one", exc, len(group))
            for item in group:
                self._run([item])
            return
        for (_, future), result in zip(group, results):
            future.set_result(result)

    def _call(self, calls: list[Call]) -> list[Any]:
        requests = [c.request for c in calls]
        if calls[0].op == "generate":
            return self.judge.generate(requests, progress=False)
        return self.judge.choice_probs(requests, list(calls[0].options), progress=False)
