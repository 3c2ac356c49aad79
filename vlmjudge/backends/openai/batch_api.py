"""The OpenAI Batch API as a transport: upload JSONL, create a batch, poll, download, match.

Half the price of live calls on hosted APIs, at the cost of latency (up to the
completion window). Each chunk of requests becomes one batch job; results come back
in any order and are matched to requests by `custom_id`. A line the provider failed
comes back as None (the judge turns it into a failed answer, never a guess).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ...judge import JudgeError
from ...outputs import JsonlError, parse_jsonl_lines
from .wire import WireBody

log = logging.getLogger("vlmjudge.openai")

ENDPOINT = "/v1/chat/completions"
#: Batch statuses after which nothing more will happen.
TERMINAL = ("completed", "failed", "expired", "cancelled")


class BatchRunner:
    """Runs lists of chat-completion bodies through the Batch API of one client.

    `call` wraps every HTTP call (the judge's retry loop); `sleep` is injectable for tests.
    """

    def __init__(self, client: Callable[[], Any], call: Callable[[Callable[[], Any]], Any], *,
                 poll_s: float, wait_s: float, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._call = call
        self.poll_s = poll_s
        self.wait_s = wait_s
        self._sleep = sleep
        self.jobs = 0

    def run(self, bodies: Sequence[WireBody]) -> list[dict[str, Any] | None]:
        """Response bodies in the order of `bodies`; None where the provider failed a line."""
        if not bodies:
            return []
        ids = [f"vj-{i}" for i in range(len(bodies))]
        lines = [json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": body.merged()},
                            ensure_ascii=False) for cid, body in zip(ids, bodies)]
        payload = ("\n".join(lines) + "\n").encode("utf-8")
        client = self._client()
        upload = self._call(lambda: client.files.create(
            file=("vlmjudge-batch.jsonl", payload, "application/jsonl"), purpose="batch"))
        batch = self._call(lambda: client.batches.create(
            input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h"))
        self.jobs += 1
        log.info("batch %s: %d requests submitted", batch.id, len(bodies))
        batch = self._wait(client, batch)
        if batch.status == "failed":
            errors = [getattr(e, "message", str(e)) for e in (getattr(batch.errors, "data", None) or [])]
            raise JudgeError(f"batch {batch.id} failed: {'; '.join(map(str, errors)) or 'no reason given'}")
        found: dict[str, dict[str, Any] | None] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                found.update(self._results(client, file_id))
        missing = [cid for cid in ids if found.get(cid) is None]
        if missing:
            log.warning("batch %s (%s): %d of %d requests came back without a result",
                        batch.id, batch.status, len(missing), len(ids))
        return [found.get(cid) for cid in ids]

    def _wait(self, client: Any, batch: Any) -> Any:
        started = time.monotonic()
        while batch.status not in TERMINAL:
            if time.monotonic() - started > self.wait_s:
                raise JudgeError(f"batch {batch.id} is still {batch.status} after {self.wait_s:.0f} s; "
                                 "raise batch_wait_s, or collect it later by its id")
            self._sleep(self.poll_s)
            batch = self._call(lambda batch_id=batch.id: client.batches.retrieve(batch_id))
        return batch

    def _results(self, client: Any, file_id: str) -> dict[str, dict[str, Any] | None]:
        content = self._call(lambda: client.files.content(file_id))
        out: dict[str, dict[str, Any] | None] = {}
        lines = content.content.decode("utf-8").splitlines()
        try:
            rows = [row for _, row in parse_jsonl_lines(lines, f"batch result file {file_id}")]
        except JsonlError as exc:
            raise JudgeError(str(exc)) from exc
        for row in rows:
            cid = row.get("custom_id")
            response = row.get("response") or {}
            ok = row.get("error") is None and response.get("status_code") == 200
            if not ok:
                log.warning("batch request %s failed: %s", cid, row.get("error") or response.get("status_code"))
            out[cid] = response.get("body") if ok else None
        return out
