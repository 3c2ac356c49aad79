"""Run one step per process rank, each on its own thread at the same time, as evaluate's
multi-process mode runs its processes side by side (they meet at its file locks)."""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable


def run_ranks(ranks: Iterable[int], step: Callable[[int], Any], timeout: float = 120) -> dict[int, Any]:
    """{rank: step(rank)}; an error in any rank fails the calling test with all the errors."""
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def run(rank: int) -> None:
        try:
            results[rank] = step(rank)
        except Exception as exc:  # surfaced by the assertion below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(rank,)) for rank in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not errors, errors
    return results
