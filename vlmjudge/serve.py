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
"""
from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._serve_batcher import MicroBatcher
from ._serve_faults import FaultInjector
from ._serve_parse import (
    BadRequest,
    completion_body,
    error_body,
    parse_chat_body,
    probs_body,
)

log = logging.getLogger("vlmjudge.serve")

#: Largest request body accepted (base64 images included).
MAX_BODY_BYTES = 256 * 1024 * 1024


class JudgeServer:
    """An OpenAI-compatible server over one judge; `start()` runs it in a background thread."""

    def __init__(self, judge: Any, *, host: str = "127.0.0.1", port: int = 0, model_name: str | None = None,
                 max_batch: int = 64, max_wait_s: float = 0.005, faults: FaultInjector | None = None,
                 api_key: str | None = None) -> None:
        self.judge = judge
        self.model_name = model_name or judge.model_id or judge.backend
        self.faults = faults
        self._api_key = api_key
        self.batcher = MicroBatcher(judge, max_batch=max_batch, max_wait_s=max_wait_s)
        self.httpd = _HTTPServer((host, port), _Handler)
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


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck on a slow client never blocks shutdown

    def server_bind(self) -> None:
        """Bind without http.server's reverse-DNS lookup of the host (slow where DNS is absent)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "vlmjudge-serve"

    @property
    def app(self) -> JudgeServer:
        return self.server.app  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self._send(200, {"status": "ok"})
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": self.app.model_name, "object": "model",
                                                         "created": 0, "owned_by": "vlmjudge"}]})
        else:
            self._send(404, error_body(f"no route {path}", "not_found", 404))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self._read_body()
        if body is None:
            return
        if path != "/v1/chat/completions":
            self._send(404, error_body(f"no route {path}", "not_found", 404))
            return
        if not self.app.authorized(self.headers.get("Authorization")):
            self._send(401, error_body("invalid or missing API key", "authentication_error", 401))
            return
        if self._inject_fault():
            return
        try:
            payload = json.loads(body)
            if isinstance(payload, dict) and payload.get("model") not in (None, self.app.model_name):
                self._send(404, error_body(f"model {payload.get('model')!r} is not served here "
                                           f"(serving {self.app.model_name!r})", "not_found", 404))
                return
            call = parse_chat_body(payload)
        except (json.JSONDecodeError, BadRequest) as exc:
            self._send(400, error_body(str(exc), "invalid_request_error", 400))
            return
        try:
            result = self.app.batcher.submit(call).result()
        except ValueError as exc:  # the judge rejected the input (for example an option that is not one token)
            self._send(400, error_body(str(exc), "invalid_request_error", 400))
            return
        except Exception as exc:  # the judge broke on this request: the client may retry
            log.warning("judge failed: %s", exc)
            self._send(500, error_body(f"judge failed: {exc}", "server_error", 500))
            return
        if call.op == "generate":
            if not result.ok:
                self._send(500, error_body("the judge failed on this request", "server_error", 500))
            else:
                self._send(200, completion_body(self.app.model_name, result))
        elif not result:
            self._send(500, error_body("the judge gave no probabilities for this request", "server_error", 500))
        else:
            self._send(200, probs_body(self.app.model_name, result))

    def _read_body(self) -> bytes | None:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(400 if length < 0 else 413, error_body("bad or too large Content-Length",
                                                              "invalid_request_error", 400))
            return None
        return self.rfile.read(length)

    def _inject_fault(self) -> bool:
        faults = self.app.faults
        kind = faults.draw() if faults is not None else None
        if kind is None:
            return False
        log.debug("injecting fault %s", kind)
        if kind == "rate_limit":
            self._send(429, error_body("injected fault: rate limited", "rate_limit_error", 429))
        elif kind == "server_error":
            self._send(500, error_body("injected fault: server error", "server_error", 500))
        else:
            if kind == "delay":
                time.sleep(faults.delay_s)  # past the client's timeout: it has given up by now
            self._drop()
        return True

    def _drop(self) -> None:
        """Close the connection without a response."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError as exc:  # the client has already closed it: the connection is gone either way
            log.debug("drop: %s", exc)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError) as exc:
            log.debug("client went away before the response: %s", exc)
            self.close_connection = True


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
    parser.add_argument("--api-key-env", default=None,
                        help="require clients to send the key held in this environment variable")
    parser.add_argument("--inject-faults", type=float, default=0.0, metavar="RATE",
                        help="TESTING AID: fail this fraction of requests (429, 500, delay, dropped connection)")
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
    judge = load_judge(args.model, backend=args.backend, **kwargs)
    faults = FaultInjector(args.inject_faults, args.fault_seed, args.fault_delay_s) if args.inject_faults else None
    server = JudgeServer(judge, host=args.host, port=args.port, model_name=args.served_model_name or args.model,
                         max_batch=args.max_batch, max_wait_s=args.max_wait_ms / 1000.0, faults=faults,
                         api_key=api_key)
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
