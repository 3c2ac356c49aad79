"""Micro-batching for `vlmjudge serve`: concurrent HTTP requests become batched judge calls.

Handler threads submit calls into one bounded queue; one worker thread owns the judge. It
takes the oldest call, then gathers more of the same kind (same operation and options)
that arrive within `max_wait_s`, up to `max_batch`, and makes one `judge.generate` or
`judge.choice_probs` call for all of them. Calls of another kind wait for the next round.

A call whose client has gone is cancelled: taken out of the queue if it is still waiting,
and, if it is running, flagged through `Request.meta[CANCEL_META_KEY]`, which a backend
that decodes token by token reads to stop the request at its next token. Identical
requests in one round are sent once, so one client leaving never stops another's answer.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from ..requests import CANCEL_META_KEY
from .parse import Call

log = logging.getLogger("vlmjudge.serve")


class QueueFull(RuntimeError):
    """The server already holds as many requests as it accepts: HTTP 503 (clients retry)."""


class Cancelled(RuntimeError):
    """The request was cancelled because its client disconnected."""


@dataclass(eq=False)
class _Entry:
    call: Call
    future: Future = field(default_factory=Future)
    gone: threading.Event = field(default_factory=threading.Event)


class MicroBatcher:
    """A bounded queue and a worker thread in front of one judge."""

    def __init__(self, judge: Any, *, max_batch: int = 64, max_wait_s: float = 0.005, max_queue: int = 1024) -> None:
        if max_batch < 1 or max_wait_s < 0 or max_queue < 1:
            raise ValueError("max_batch and max_queue must be >= 1 and max_wait_s >= 0")
        self.judge = judge
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        #: Sizes of the judge calls made, in order: how well requests were grouped.
        self.batch_sizes: list[int] = []
        #: Requests cancelled while waiting (never reached the judge) and while running.
        self.cancelled = {"waiting": 0, "running": 0}
        self._cond = threading.Condition()
        self._waiting: deque[_Entry] = deque()
        self._running: list[_Entry] = []
        self._running_since: float | None = None
        self._entries: dict[int, _Entry] = {}  # id(future) -> entry, for cancel()
        self._closed = False
        self._worker = threading.Thread(target=self._loop, name="vlmjudge-serve-batcher", daemon=True)
        self._worker.start()

    # -- handler side ------------------------------------------------------------------
    def submit(self, call: Call) -> Future:
        """A future for the call's result (an Answer, or a probability dict); QueueFull when the
        queue holds `max_queue` requests already."""
        entry = _Entry(call)
        with self._cond:
            if self._closed:
                raise RuntimeError("server shutting down")
            if len(self._waiting) + len(self._running) >= self.max_queue:
                raise QueueFull(f"the server holds {self.max_queue} requests already")
            self._waiting.append(entry)
            self._entries[id(entry.future)] = entry
            self._cond.notify_all()
        return entry.future

    def cancel(self, future: Future) -> str:
        """Cancel a submitted call: "dequeued" (it never reaches the judge), "stopping" (it is
        running: flagged to stop at its next token) or "done" (too late)."""
        with self._cond:
            entry = self._entries.pop(id(future), None)
            if entry is None or future.done():
                return "done"
            entry.gone.set()
            if entry in self._waiting:
                self._waiting.remove(entry)
                self.cancelled["waiting"] += 1
                state = "dequeued"
            else:
                self.cancelled["running"] += 1
                state = "stopping"
        _settle(future, exception=Cancelled("the client disconnected"))
        return state

    def status(self) -> dict[str, Any]:
        """Queue depth, the requests in the running judge call and how long it has run."""
        with self._cond:
            since = self._running_since
            return {"waiting": len(self._waiting), "running": len(self._running), "max_queue": self.max_queue,
                    "running_for_s": round(time.monotonic() - since, 3) if since is not None else 0.0,
                    "cancelled": dict(self.cancelled)}

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._worker.join(timeout=10)

    # -- worker side -------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            group = self._next_group()
            if group is None:
                break
            try:
                self._run(group)
            finally:
                with self._cond:
                    for entry in group:
                        self._entries.pop(id(entry.future), None)
                    self._running, self._running_since = [], None
        with self._cond:
            leftovers, self._waiting = list(self._waiting), deque()
        for entry in leftovers:
            if not entry.future.done():
                entry.future.set_exception(RuntimeError("server shutting down"))

    def _next_group(self) -> list[_Entry] | None:
        """The oldest waiting call and those of its kind that arrive within max_wait_s (None once closed)."""
        with self._cond:
            while not self._waiting and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            first = self._waiting.popleft()
            group = [first]
            deadline = time.monotonic() + self.max_wait_s
            while True:
                for entry in [e for e in self._waiting if e.call.group == first.call.group]:
                    if len(group) == self.max_batch:
                        break
                    self._waiting.remove(entry)
                    group.append(entry)
                remaining = deadline - time.monotonic()
                if len(group) == self.max_batch or remaining <= 0 or self._closed:
                    break
                self._cond.wait(remaining)
            self._running, self._running_since = group, time.monotonic()
            return group

    def _run(self, group: list[_Entry]) -> None:
        """One judge call for the group's distinct requests; each request's cancel flag is set
        only when every client waiting for it has gone."""
        by_request: dict[str, list[_Entry]] = {}
        for entry in (e for e in group if not e.gone.is_set()):  # gone while the group gathered
            by_request.setdefault(entry.call.request.content_hash(), []).append(entry)
        distinct = []
        for members in by_request.values():
            request = members[0].call.request
            request.meta[CANCEL_META_KEY] = lambda members=members: all(m.gone.is_set() for m in members)
            distinct.append((members[0].call, members))
        if distinct:
            self.batch_sizes.append(len(distinct))
            self._answer(distinct)

    def _answer(self, distinct: list[tuple[Call, list[_Entry]]]) -> None:
        try:
            results = self._call([call for call, _ in distinct])
        except Exception as exc:  # one bad request must not fail its neighbours: retry them alone
            if len(distinct) == 1:
                for entry in distinct[0][1]:
                    _settle(entry.future, exception=exc)
                return
            log.warning("batched judge call failed (%s); answering its %d requests one by one", exc, len(distinct))
            for item in distinct:
                self._answer([item])
            return
        for (_, members), result in zip(distinct, results):
            for entry in members:
                _settle(entry.future, result=result)

    def _call(self, calls: list[Call]) -> list[Any]:
        requests = [c.request for c in calls]
        if calls[0].op == "generate":
            return self.judge.generate(requests, progress=False)
        return self.judge.choice_probs(requests, list(calls[0].options), progress=False)


def _settle(future: Future, *, result: Any = None, exception: BaseException | None = None) -> None:
    """Set a future's outcome unless cancel() has already settled it."""
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)
    except InvalidStateError as exc:  # cancelled meanwhile: nobody waits for it
        log.debug("result for a cancelled request dropped: %s", exc)
