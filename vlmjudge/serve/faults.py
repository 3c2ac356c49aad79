"""Fault injection for `vlmjudge serve`: a testing aid for clients' retry logic.

With probability `rate` a chat-completions request gets a fault instead of an answer;
the faults take turns (429, 500, a delay past the client's timeout, a dropped
connection, a 200 whose JSON body is cut short, a 200 carrying a proxy's HTML page), so
a few dozen requests meet every kind. Seeded, so a run is repeatable. Never enable it
on a server that real clients use.
"""
from __future__ import annotations

import random
import threading

FAULT_KINDS = ("rate_limit", "server_error", "delay", "drop", "truncated_body", "html_body")
#: Faults answered with HTTP 200 and a body that is not a chat completion.
BODY_FAULTS = ("truncated_body", "html_body")
#: What a misconfigured proxy in front of a server sends with status 200.
PROXY_HTML = (b"<!DOCTYPE html><html><head><title>Gateway</title></head>"
              b"<body><h1>Please wait while we check your browser</h1></body></html>")


def mangled_body(kind: str, data: bytes) -> tuple[bytes, str]:
    """(body, content type) of a body fault: the first half of the real JSON body, or HTML."""
    if kind == "truncated_body":
        return data[: len(data) // 2], "application/json"
    if kind == "html_body":
        return PROXY_HTML, "text/html; charset=utf-8"
    raise ValueError(f"{kind!r} is not a body fault; choose from {BODY_FAULTS}")


class FaultInjector:
    """Decides, request by request, whether and how to fail; counts what it injected."""

    def __init__(self, rate: float, seed: int = 0, delay_s: float = 5.0,
                 kinds: tuple[str, ...] = FAULT_KINDS) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be in [0, 1], got {rate}")
        if delay_s <= 0:
            raise ValueError(f"fault delay must be > 0 s, got {delay_s}")
        unknown = set(kinds) - set(FAULT_KINDS)
        if not kinds or unknown:
            raise ValueError(f"fault kinds must be a non-empty subset of {FAULT_KINDS}, got {kinds}")
        self.rate = rate
        self.delay_s = delay_s
        self.kinds = tuple(kinds)
        self._rng = random.Random(seed)
        self._turn = 0
        self._lock = threading.Lock()
        self.counts = {kind: 0 for kind in FAULT_KINDS}

    def draw(self) -> str | None:
        """The fault for the next request, or None to answer it normally."""
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            kind = self.kinds[self._turn % len(self.kinds)]
            self._turn += 1
            self.counts[kind] += 1
            return kind
