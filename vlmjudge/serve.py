"""`vlmjudge serve`: an OpenAI-compatible HTTP server over any Judge, so one GPU serves many.

Several processes or machines point the OpenAI-compatible backend (`backend="openai"`,
`base_url="http://HOST:PORT/v1"`) at one server; concurrent requests are micro-batched
into the judge's batched calls. Standard library only (`http.server`).

Endpoints: `GET /v1/models`, `GET /health`, `POST /v1/chat/completions` with
messages (text and base64 `image_url` data URLs; no URL is ever fetched), system turns,
`max_tokens` / `max_completion_tokens`, `temperature` (default 0: greedy), `top_p`,
`seed`, `stop`, `response_format` (`json_schema`, `json_object`), and these extensions:

- `continue_final_message: true` with a final assistant message: that message is the
  assistant prefix (`Request.prefix`) and the answer continues it (vLLM's semantics).
- EBNF grammars as `structured_outputs: {"grammar": ...}` (vLLM), `guided_grammar`
  (older vLLM) or `ebnf` (SGLang); JSON schemas also as `structured_outputs: {"json": ...}`
  or `guided_json`.
- `vlmjudge_first_options: [...]`: restrict the first answer token of a constrained
  answer to these words (`Constraint.first_options`).
- `vlmjudge_options: [...]` (at least two words): the server answers with
  `judge.choice_probs` over them, returned as the first token's `top_logprobs`
  (options with zero probability left out). `logprobs` without `vlmjudge_options` gets
  HTTP 400 "unsupported": a judge gives probabilities over named options, not a full top-k.

A request the judge fails on gets HTTP 500 (clients retry it). `--inject-faults RATE`
is a testing aid for clients' retry logic (see `vlmjudge._serve_faults`).

Hardening (`ServeLimits`, every field a flag): a bounded request queue (HTTP 503 with
Retry-After past it) behind a listen backlog at least as long, so clients that connect
at once are queued, not reset; caps on max_tokens (larger asks are lowered to the cap),
prompt tokens, body bytes and image pixels; socket read and whole-body timeouts (HTTP
408); the API key checked from the headers before any body is read, on every route but
`/health`; every bad body a 4xx JSON error and every handler failure a 500 JSON error;
a request whose client disconnects is cancelled (dropped from the queue, or stopped at
its next token by a backend that decodes token by token). `/health` reports the queue.
"""
from __future__ import annotations

import argparse
import hmac
import logging
import os
import sys
import threading
from typing import Any, Callable

from ._serve_batcher import MicroBatcher
from ._serve_faults import FaultInjector
from ._serve_http import Handler, HTTPServer
from ._serve_parse import ServeLimits

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


def configure_serve(parser: argparse.ArgumentParser) -> None:
    """Add `vlmjudge serve`'s flags to its sub-parser."""
    parser.add_argument("--model", required=True, help="Hub id or checkpoint dir (replay: a JSONL file)")
    parser.add_argument("--backend", default="transformers", help="the judge behind the server")
    parser.add_argument("--revision", default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--batch-size", type=int, default=8, help="the judge's forward batch size")
    parser.add_argument("--cache", default=None, help="SQLite response cache of the judge behind the server")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", default=None, help="the model name clients send (default: --model)")
    parser.add_argument("--max-batch", type=int, default=64, help="most HTTP requests in one judge call")
    parser.add_argument("--max-wait-ms", type=float, default=5.0,
                        help="how long the batcher waits for more requests to group")
    d = ServeLimits()
    limits = parser.add_argument_group("limits (per request, and the queue)")
    limits.add_argument("--max-tokens", type=int, default=d.max_tokens,
                        help="cap on max_tokens: a larger request is lowered to it")
    limits.add_argument("--max-prompt-tokens", type=int, default=d.max_prompt_tokens,
                        help="prompt text tokens (images excluded); more is HTTP 400")
    limits.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes, help="request body; more is HTTP 413")
    limits.add_argument("--max-image-pixels", type=int, default=d.max_image_pixels,
                        help="pixels of one image, checked before decoding it")
    limits.add_argument("--max-queue", type=int, default=d.max_queue,
                        help="requests waiting or running (also the listen backlog); more is HTTP 503")
    limits.add_argument("--read-timeout-s", type=float, default=d.read_timeout_s,
                        help="longest wait for one socket read")
    limits.add_argument("--body-timeout-s", type=float, default=d.body_timeout_s,
                        help="longest time a request body may take to arrive")
    parser.add_argument("--api-key-env", default=None,
                        help="require clients to send the key held in this environment variable")
    parser.add_argument("--inject-faults", type=float, default=0.0, metavar="RATE",
                        help="TESTING AID: fail this fraction of requests (429, 500, delay, dropped connection, "
                             "truncated or HTML 200 bodies)")
    parser.add_argument("--fault-seed", type=int, default=0)
    parser.add_argument("--fault-delay-s", type=float, default=5.0, help="the injected delay (past clients' timeout)")
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Load the judge and serve until interrupted."""
    from .judge import load_judge
    kwargs: dict[str, Any] = {"batch_size": args.batch_size, "cache": args.cache}
    for name in ("revision", "device", "dtype"):
        if getattr(args, name, None) is not None:
            kwargs[name] = getattr(args, name)
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            print(f"vlmjudge serve: environment variable {args.api_key_env} is empty", file=sys.stderr)
            return 2
    try:
        limits = ServeLimits(max_tokens=args.max_tokens, max_prompt_tokens=args.max_prompt_tokens,
                             max_body_bytes=args.max_body_bytes, max_image_pixels=args.max_image_pixels,
                             max_queue=args.max_queue, read_timeout_s=args.read_timeout_s,
                             body_timeout_s=args.body_timeout_s)
    except ValueError as exc:
        print(f"vlmjudge serve: {exc}", file=sys.stderr)
        return 2
    judge = load_judge(args.model, backend=args.backend, **kwargs)
    faults = FaultInjector(args.inject_faults, args.fault_seed, args.fault_delay_s) if args.inject_faults else None
    server = JudgeServer(judge, host=args.host, port=args.port, model_name=args.served_model_name or args.model,
                         max_batch=args.max_batch, max_wait_s=args.max_wait_ms / 1000.0, faults=faults,
                         api_key=api_key, limits=limits)
    print(f"vlmjudge serve: {server.model_name!r} ({judge.backend}) at {server.url}/v1", file=sys.stderr, flush=True)
    if faults is not None:
        print(f"vlmjudge serve: injecting faults into {args.inject_faults:.0%} of requests (testing aid)",
              file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # Ctrl-C is how a foreground server is stopped
        print("vlmjudge serve: stopped", file=sys.stderr)
    finally:
        server.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m vlmjudge.serve ...`: the same as `vlmjudge serve ...`."""
    parser = argparse.ArgumentParser(prog="vlmjudge serve", description="OpenAI-compatible server over a judge")
    configure_serve(parser)
    return run_serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
