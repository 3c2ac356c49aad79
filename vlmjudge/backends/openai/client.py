"""Any OpenAI-compatible server as a judge: vLLM (`vlmjudge serve` starts one), SGLang, hosted APIs.

Why it exists: one GPU server (or a hosted model) can judge for many processes and
machines. `OpenAIJudge` lists what it adds over the SDK (prefix-ordered requests, bounded
concurrency with retries, endpoint-scoped cache identity, constraints and option
probabilities through the servers' extensions, the Batch API).

The API key is read from the environment variable `api_key_env` when the client is
built; it is never stored on the judge, pickled, logged, cached or put in a manifest.
"""
from __future__ import annotations

import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ...judge import Judge, JudgeError, JudgeStats
from ...options import OptionProbs
from ...requests import Answer, Request
from .batch_api import BatchRunner
from .first_options_check import FirstOptionsCheck
from .images import ImageSending, ImageStore
from .option_ids import OptionIds
from .option_probs import OptionReading, prefix_of
from .reading import ReplyReading, UnusableReply
from .replies import UnparseableResponse, completion_json, reply_byte_cap, retry_after_seconds
from .threads import RequestThreads
from .wire import (SERVERS, WireBody, fallback_body, generate_body, grouped_order, in_callers_order,
                   probs_body)

log = logging.getLogger("vlmjudge.openai")

T = TypeVar("T")

#: Attempts a request may spend whole, each to its deadline, before it fails (a dripping server).
TIMEOUT_ATTEMPTS = 2
#: HTTP statuses worth retrying besides 5xx: request timeout, conflict (lock), rate limit.
RETRY_STATUSES = (408, 409, 429)
#: Key placeholder for local servers that check no key (vLLM's convention).
NO_KEY = "EMPTY"
#: Where the SDK sends requests when neither base_url nor OPENAI_BASE_URL names a server.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Requests in flight by default: a hosted API's rate limits, or enough to keep a server's scheduler full.
DEFAULT_CONCURRENCY = {"openai": 8, "vllm": 128, "sglang": 128}


@dataclass
class OpenAIStats(JudgeStats):
    """JudgeStats plus the 2xx bodies that did not parse as a chat completion (each one retried),
    the chat completions with a field that cannot be used (`replies.MalformedResponse`: each one a
    failed request), the prompt tokens the server says its prefix cache served (part of
    `prefill_tokens`) and the seconds spent waiting on the server, summed over requests (they overlap)."""

    unparseable_responses: int = 0
    malformed_responses: int = 0
    cached_prompt_tokens: int = 0
    request_seconds: float = 0.0


class OpenAIRequestError(JudgeError):
    """The server refused a request for a reason retrying cannot fix (a 4xx other than 408/409/429)."""


class OpenAIKeyError(OpenAIRequestError):
    """The server refused the API key (HTTP 401 or 403); the message names the variable it was read from."""


class _GaveUp(Exception):
    """Internal: the last retry failed too (or the reply was refused, which no retry changes)."""


class OpenAIJudge(RequestThreads, OptionReading, OptionIds, ReplyReading, FirstOptionsCheck, ImageSending, Judge):
    """A judge that sends requests to an OpenAI-compatible chat-completions endpoint.

    What it adds over the SDK:

    - A call's requests go out in prefix order (same system turn, image, ... adjacent; one
      prefix's requests back to back, one burst), so the server's prefix cache hits; answers come
      back in the caller's order. `stats.cached_prompt_tokens` adds up the prompt tokens the server
      says its cache served (`usage.prompt_tokens_details.cached_tokens`).
    - Each image encoded once per judge, and sent once where the server allows (`images`: file
      URLs under `media_dir`, else data URLs; vLLM `image_uuids`); `manifest()["images"]` says how.
    - A thread pool bounds concurrency (`DEFAULT_CONCURRENCY`: enough to keep a local server's
      scheduler full, few for a hosted API); retries with exponential backoff and jitter on 429,
      5xx, timeouts, dropped connections and 2xx bodies that are not a chat completion
      (truncated JSON, a proxy's HTML page; counted in `stats.unparseable_responses`). After
      the last retry the request becomes a failed Answer (finish_reason "error", never
      cached, never a guess); any other 4xx raises `OpenAIRequestError`.
    - `timeout_s` bounds each attempt whole (connect, send, headers, body: `transport`), not
      each read; a reply is refused past `max_response_bytes` (default: what a legitimate reply
      to that request can take, `replies.reply_byte_cap`), failed at once, not retried. A reply
      with a field that cannot be used (`replies`) fails its request, counted in
      `stats.malformed_responses`.
    - The cache identity includes the endpoint (`base_url`, without credentials), so two
      servers that publish the same model name never share cached answers.
    - The assistant prefix goes as a final assistant message with `continue_final_message`
      (the vLLM / SGLang extension). A constraint goes to vLLM and SGLang as the grammar the
      in-process backends compile (vLLM: `structured_outputs`, SGLang: `ebnf`), to a hosted API
      (`server="openai"`) as a `response_format` JSON schema. `first_options` goes to vLLM in
      `vllm_xargs`; where the server does not enforce it (`first_options_check`), a warning says so once
      and `first_options_unenforced` counts the requests.
    - `choice_probs` on vLLM reads the options' token ids (`read_by_id`, `option_ids`), elsewhere
      the first token's `top_logprobs` as `vlmjudge.options` defines them. An option missing from
      the top-k is never 0: `option_probs` asks again with `max_top_logprobs`, then scores it with
      `prompt_logprobs` (`score_unseen`, vLLM only), else bounds it (`truncated`). Where the server gives no logprobs at all, it generates a few tokens and
      takes the leading option (one-hot, no mass); the manifest counts `choice_probs_fallbacks`.
      `normalize=False` reads the same probabilities unnormalised, with no one-hot fallback.
    - `batch_api=True` sends each chunk as one Batch-API job (upload, poll, download).
    """

    backend = "openai"
    _refusal, _gave_up, _unusable = OpenAIRequestError, _GaveUp, UnusableReply  # what `OptionReading` catches

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int | None = None, max_retries: int = 6, timeout_s: float = 60.0,
                 backoff_s: float = 0.5,
                 max_backoff_s: float = 30.0, top_logprobs: int = 20, max_top_logprobs: int = 100,
                 score_unseen: bool = True, server: str = "vllm", read_by_id: bool = True,
                 media_dir: str | os.PathLike | None = None, image_uuids: bool | None = None,
                 fallback_max_tokens: int = 8, batch_api: bool = False, batch_poll_s: float = 10.0,
                 batch_wait_s: float = 86400.0, batch_size: int | None = None,
                 max_response_bytes: int | None = None, **kwargs: Any) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"the openai backend needs the server's model name as a string, got {model!r}")
        if server not in SERVERS:
            raise ValueError(f"server must be one of {SERVERS} (the family whose request extensions to "
                             f"use; openai for hosted APIs), got {server!r}")
        if concurrency is None:
            concurrency = DEFAULT_CONCURRENCY[server]
        for name, value in (("concurrency", concurrency), ("top_logprobs", top_logprobs),
                            ("max_top_logprobs", max_top_logprobs), ("fallback_max_tokens", fallback_max_tokens)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if max_retries < 0 or not 0 < timeout_s < math.inf or backoff_s < 0 or batch_poll_s < 0:
            raise ValueError("max_retries and backoff_s must be >= 0, timeout_s finite and > 0, batch_poll_s >= 0")
        if max_response_bytes is not None and (isinstance(max_response_bytes, bool)
                                               or not isinstance(max_response_bytes, int) or max_response_bytes < 1):
            raise ValueError(f"max_response_bytes must be a whole number of bytes >= 1 (or None: what a "
                             f"legitimate reply can take), got {max_response_bytes!r}")
        if batch_size is None:
            batch_size = 1000 if batch_api else 4 * concurrency
        super().__init__(model_id=model, batch_size=batch_size, **kwargs)
        self.stats = OpenAIStats()
        self._keep_settings(base_url=base_url, api_key_env=api_key_env, concurrency=concurrency,
                            max_retries=max_retries, timeout_s=timeout_s, backoff_s=backoff_s,
                            max_backoff_s=max_backoff_s, top_logprobs=top_logprobs,
                            max_top_logprobs=max_top_logprobs, score_unseen=score_unseen,
                            server=server, read_by_id=read_by_id, fallback_max_tokens=fallback_max_tokens,
                            batch_api=batch_api, batch_poll_s=batch_poll_s, batch_wait_s=batch_wait_s,
                            max_response_bytes=max_response_bytes)
        self._images = ImageStore.for_server(server, media_dir, image_uuids, batch_api=batch_api, wait_s=timeout_s)
        self._refused: dict[str, bool] = {}  # extensions the server refused once: not asked again
        #: Transport events: retries taken, attempts past their deadline, replies refused past their
        #: cap, requests failed, choice_probs answered by the generate-and-parse fallback, batch
        #: jobs run, requests whose first_options the server did not enforce.
        self.counters = {"retries": 0, "timeouts": 0, "oversized_responses": 0, "failed_requests": 0,
                         "choice_probs_fallbacks": 0, "batch_jobs": 0, "wider_top_logprobs": 0,
                         "options_scored_directly": 0, "first_options_unenforced": 0}
        self._lock = threading.Lock()
        self._client_obj: Any = None
        self._pool = None  # the request threads (`RequestThreads._executor`), started at the first call
        self._pid = os.getpid()  # the process whose client and threads these are
        self._rng = random.Random()
        self._api_key()  # fail now, not at the first call, when no key can be found

    # -- client and key ---------------------------------------------------------------
    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url is not None:
            return NO_KEY
        raise ValueError(f"no API key: set the environment variable {self.api_key_env} "
                         "(or pass base_url= for a local server that needs none)")

    def _in_this_process(self) -> None:
        """Drop a client and threads inherited through fork: the child has none of the parent's
        threads (a pool that believes it has them never runs a request) and must not share its sockets."""
        if self._pid != os.getpid():
            self._lock, self._client_obj, self._pool, self._pid = threading.Lock(), None, None, os.getpid()

    def _client(self) -> Any:
        self._in_this_process()
        with self._lock:
            if self._client_obj is None:
                try:
                    import openai
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise ImportError("the openai backend needs the openai SDK: pip install 'vlmjudge[openai]'") \
                        from exc
                from .transport import bounded_http_client

                # Our own retry loop decides what is retried and how long to wait.
                http = bounded_http_client(self.endpoint(), self.timeout_s)
                self._client_obj = openai.OpenAI(api_key=self._api_key(), base_url=self.base_url,
                                                 max_retries=0, timeout=self.timeout_s, http_client=http)
            return self._client_obj

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the client (it holds the key and sockets) or the threads; workers rebuild them."""
        state = self.__dict__.copy()
        state["_client_obj"], state["_pool"] = None, None
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._pid = threading.Lock(), os.getpid()

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model_id!r}, base_url={_public_url(self.base_url)!r})"

    # -- what gets recorded -------------------------------------------------------------
    def endpoint(self) -> str:
        """The server this judge talks to, as the SDK resolves it, without credentials: base_url,
        else the OPENAI_BASE_URL environment variable, else OpenAI's API."""
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return (_public_url(url) or url).rstrip("/")

    def identity(self) -> dict[str, Any]:
        """The base identity plus the endpoint: the same model name on two servers is two judges."""
        return {**super().identity(), "base_url": self.endpoint()}

    def manifest(self) -> dict[str, Any]:
        """Base manifest (the endpoint included) plus the transport's bounds and counters, and the
        answers refused as the stats count them (unparseable, malformed, invalid: a mass above 1)."""
        with self._lock:
            counters = dict(self.counters)
            refused = {name: getattr(self.stats, name)
                       for name in ("unparseable_responses", "malformed_responses", "invalid_answers")}
        return {**super().manifest(), "batch_api": self.batch_api, "server": self.server,
                "timeout_s": self.timeout_s, "max_response_bytes": self.max_response_bytes, **counters, **refused,
                "images": self._images.manifest(),
                "options_by_token_id": bool(self.read_by_id and self.server == "vllm"
                                            and not self._refused.get("logprob_token_ids"))}

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] += n

    # -- retries ------------------------------------------------------------------------
    def _with_retries(self, call: Callable[[], T]) -> T:
        """`call()`, retried on transient failures; raises _GaveUp after the last retry, or at once
        for a reply past its cap (a server that sent one will send it again). An attempt that used
        up its whole `timeout_s` is tried once more, not `max_retries` times: a server that drips
        held each of them to the deadline, so a request ends within about 2 x `timeout_s`."""
        import openai

        from .transport import ResponseTooLarge

        timed_out = 0
        for attempt in range(self.max_retries + 1):
            try:
                return call()
            except ResponseTooLarge as exc:
                self._count("oversized_responses")
                raise _GaveUp(f"after {attempt + 1} attempt(s), not retried: {exc}") from exc
            except Exception as exc:  # classified below; anything unknown is re-raised
                wait = self._transient_wait(exc, attempt)
                timed_out += isinstance(exc, openai.APITimeoutError)
                if attempt == self.max_retries or timed_out == TIMEOUT_ATTEMPTS:
                    raise _GaveUp(f"after {attempt + 1} attempt(s): {type(exc).__name__}: {exc}") from exc
                self._count("retries")
                log.debug("transient %s (attempt %d of %d), retrying in %.2f s",
                          type(exc).__name__, attempt + 1, self.max_retries + 1, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _transient_wait(self, exc: Exception, attempt: int) -> float:
        """Seconds to wait before retrying `exc`; raises it again when it is not transient."""
        import openai
        retry_after = 0.0
        if isinstance(exc, openai.APIStatusError):
            if (status := exc.status_code) not in RETRY_STATUSES and status < 500:
                raise (OpenAIKeyError if (key := status in (401, 403)) else OpenAIRequestError)(
                    f"{_public_url(self.base_url) or 'the API'} refused the request (HTTP {status}): {exc.message}"
                    + (f"; set {self.api_key_env} to a key it accepts" if key else "")) from exc
            retry_after = retry_after_seconds(exc)
        elif not isinstance(exc, (openai.APIConnectionError, UnparseableResponse)):  # APITimeoutError included
            raise exc
        if isinstance(exc, openai.APITimeoutError):
            self._count("timeouts")
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        backoff = min(self.max_backoff_s, self.backoff_s * 2 ** attempt) * jitter
        return max(backoff, min(retry_after, self.max_backoff_s))

    def _create(self, body: WireBody) -> dict[str, Any]:
        client = self._client()
        return self._with_retries(lambda: self._post_once(client, body))

    def _post_once(self, client: Any, body: WireBody) -> dict[str, Any]:
        """One request, whole within `timeout_s` and its reply within its cap (`transport.bounded`);
        its body parsed here, not by the SDK, so that a 2xx body that is not a chat completion
        raises UnparseableResponse (retried) instead of escaping as a str or a JSON error.
        Sent by the SDK's `post` with the body as written (`wire` writes the API's own field
        names), not by `chat.completions.create`, whose per-request walk over the parameters'
        type hints cost more client CPU than the request's JSON and HTTP; the SDK still raises
        its errors for a refused status."""
        import httpx

        from .transport import bounded

        merged = body.merged()
        with bounded(self.timeout_s, self.max_response_bytes or reply_byte_cap(merged)):
            raw = client.post("/chat/completions", body=merged, cast_to=httpx.Response)
            content = raw.content
        try:
            return completion_json(content)
        except UnparseableResponse as exc:
            with self._lock:
                self.stats.unparseable_responses += 1
            log.debug("unparseable %s response: %s", raw.status_code, exc)
            raise

    # -- call order -----------------------------------------------------------------------
    def generate(self, requests: Sequence[Request], *, progress: bool | None = None) -> list[Answer]:
        """Answers in the caller's order; the requests go out in prefix order."""
        return self._in_prefix_order(requests, lambda ordered: super(OpenAIJudge, self).generate(
            ordered, progress=progress))

    def choice_probs(self, requests: Sequence[Request], options: Sequence[str], *, normalize: bool = True,
                     progress: bool | None = None) -> list[dict[str, float]]:
        """Option probabilities in the caller's order; the requests go out in prefix order."""
        return self._in_prefix_order(requests, lambda ordered: super(OpenAIJudge, self).choice_probs(
            ordered, options, normalize=normalize, progress=progress))

    def _in_prefix_order(self, requests: Sequence[Request], run: Callable[[list[Request]], list[T]]) -> list[T]:
        """The whole call in `grouped_order`, results back in the caller's order. Why per call: the
        base judge cuts a call into chunks in the order it gets them, so requests sharing a prefix
        that lie far apart would otherwise reach the server in different chunks."""
        requests = list(requests)
        if not all(isinstance(r, Request) for r in requests):
            return run(requests)  # the base judge names the offending item
        order = grouped_order(requests, self._images)
        return in_callers_order(order, run([requests[i] for i in order]))

    # -- the two primitives ---------------------------------------------------------------
    def _generate(self, requests: list[Request]) -> list[Answer]:
        urls = self._images
        order = grouped_order(requests, urls)
        bodies = {i: generate_body(requests[i], self.model_id, urls, self.server) for i in order}
        self._note_first_options(requests)
        self._account(requests)
        if self.batch_api:
            results = self._batch([bodies[i] for i in order])
            answers = {i: self._answer(r, bodies[i]) for i, r in zip(order, results)}
        else:
            answers = self._parallel(order, lambda i: self._answer(self._live(bodies[i]), bodies[i]))
        return [answers[i] for i in range(len(requests))]

    def _probs_bodies(self, requests: list[Request]) -> tuple[list[int], dict[int, Any]]:
        """The order to send `requests` in (shared images together) and each one's first-token
        logprobs body; the requests are counted as asked."""
        urls = self._images
        order = grouped_order(requests, urls)
        bodies = {i: probs_body(requests[i], self.model_id, urls, self.top_logprobs) for i in order}
        self._account(requests)
        return order, bodies

    def _choice_probs(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        order, bodies = self._probs_bodies(requests)
        if self.batch_api:
            firsts = dict(zip(order, self._batch([bodies[i] for i in order])))
            probs = {i: self._probs_from(firsts[i], options, prefix_of(bodies[i])) for i in order}  # not widened
            redo = [i for i in order if probs[i] is None]
            if redo:
                self._count("choice_probs_fallbacks", len(redo))
                asked = [fallback_body(bodies[i], self.fallback_max_tokens) for i in redo]
                probs.update({i: self._one_hot(self._answer(r, b), options)
                              for i, r, b in zip(redo, self._batch(asked), asked)})
            out = {i: p or OptionProbs() for i, p in probs.items()}
        else:
            out = self._parallel(order, lambda i: self._live_probs(bodies[i], options))
        return [out[i] for i in range(len(requests))]

    def _choice_probs_raw(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        """Full-vocabulary P(option) from the first token's top logprobs, as the server gives them
        (an option outside them widened, scored or bounded as `_choice_probs` does). A response
        without logprobs gives `{}` (counted in `failed_requests`): no one-hot stands in for a probability.
        """
        order, bodies = self._probs_bodies(requests)
        if self.batch_api:
            firsts = dict(zip(order, self._batch([bodies[i] for i in order])))
            out = {i: self._raw_or_failed(firsts[i], options, prefix_of(bodies[i])) for i in order}
        else:
            out = self._parallel(order, lambda i: self._live_raw(bodies[i], options))
        return [out[i] for i in range(len(requests))]

    # -- live path ------------------------------------------------------------------------
    def _live(self, body: WireBody) -> dict[str, Any] | None:
        """One response body, or None when the request failed after the last retry."""
        try:
            return self._send(body)
        except _GaveUp as exc:
            log.warning("request failed %s", exc)
            return None

    # -- batch path -----------------------------------------------------------------------
    def _batch(self, bodies: list[WireBody]) -> list[dict[str, Any] | None]:
        runner = BatchRunner(self._client, self._batch_call, poll_s=self.batch_poll_s, wait_s=self.batch_wait_s)
        results = runner.run(bodies)
        self._count("batch_jobs", runner.jobs)
        return results

    def _batch_call(self, call: Callable[[], T]) -> T:
        try:
            return self._with_retries(call)
        except _GaveUp as exc:
            raise JudgeError(f"Batch API call failed {exc}") from exc

    def _account(self, requests: list[Request]) -> None:
        with self._lock:
            self.stats.forward_batches += 1
            self.stats.images_encoded += sum(len(r.images) for r in requests)


def _public_url(url: str | None) -> str | None:
    """The URL without user info, query or fragment (where credentials could hide)."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
