"""`JudgeServer`: the OpenAI-compatible server over one judge (socket, handler, batcher, limits).

Why a class of its own: tests and embedding code start a server in a thread
(`with JudgeServer(judge) as server: ...`); `vlmjudge serve` (`vlmjudge.serve.cli`)
runs the same class in the foreground.
"""
from __future__ import annotations

import hmac
import logging
import threading
from typing import Any, Callable

from .batcher import MicroBatcher
from .faults import FaultInjector
from .handler import Handler, HTTPServer
from .parse import ServeLimits

log = logging.getLogger("vlmjudge.serve")

#: Largest request body accepted by default (base64 images included).
MAX_BODY_BYTES = ServeLimits.max_body_bytes


class JudgeServer:
    """An OpenAI-compatible server over one judge; `start()` runs it in a background thread."""

    def __init__(self, judge: Any, *, host: str = "127.0.0.1", port: int = 0, model_name: str | None = None,
                 max_batch: int = 64, max_wait_s: float = 0.005, faults: FaultInjector | None = None,
                 api_key: str | None = None, limits: ServeLimits | None = None) -> None:
        self.judge = judge
        self.model_name = model_name or judge.model_id or judge.backend
        self.faults = faults
        self.limits = limits or ServeLimits()
        self._api_key = api_key
        self.count_tokens = _token_counter(judge)
        self.batcher = MicroBatcher(judge, max_batch=max_batch, max_wait_s=max_wait_s,
                                    max_queue=self.limits.max_queue)
        self.httpd = HTTPServer((host, port), Handler, backlog=self.limits.max_queue)
        self.httpd.app = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the server; clients use `url + "/v1"`."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> JudgeServer:
        """Serve in a background thread (once; a second call is a no-op)."""
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="vlmjudge-serve", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=10)
        self.httpd.server_close()
        self.batcher.close()

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def authorized(self, header: str | None) -> bool:
        if self._api_key is None:
            return True
        return hmac.compare_digest((header or "").encode(), f"Bearer {self._api_key}".encode())


def _token_counter(judge: Any) -> Callable[[str], int] | None:
    """Counts prompt tokens with the judge's tokenizer, where it has one (None: UTF-8 bytes are
    counted instead, an upper bound for byte-level tokenizers)."""
    tokenizer = getattr(judge, "tokenizer", None)
    if tokenizer is None or not callable(getattr(tokenizer, "encode", None)):
        return None
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))
