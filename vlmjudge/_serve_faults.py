"""Fault injection for `vlmjudge serve`: a testing aid for clients' retry logic.

With probability `rate` a chat-completions request gets a fault instead of an answer;
the faults take turns (429, 500, a delay past the client's timeout, a dropped
connection), so a few dozen requests meet every kind. Seeded, so a run is repeatable.
Never enable it on a server that real clients use.
"""
from __future__ import annotations

import random
import threading

FAULT_KINDS = ("rate_limit", "server_error", "delay", "drop")


class FaultInjector:
    """Decides, request by request, whether and how to fail; counts what it injected."""

    def __init__(self, rate: float, seed: int = 0, delay_s: float = 5.0) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be in [0, 1], got {rate}")
        if delay_s <= 0:
            raise ValueError(f"fault delay must be > 0 s, got {delay_s}")
        self.rate = rate
        self.delay_s = delay_s
        self._rng = random.Random(seed)
        self._turn = 0
        self._lock = threading.Lock()
        self.counts = {kind: 0 for kind in FAULT_KINDS}

    def draw(self) -> str | None:
        """The fault for the next request, or None to answer it normally."""
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            kind = FAULT_KINDS[self._turn % len(FAULT_KINDS)]
            self._turn += 1
            self.counts[kind] += 1
            return kind
