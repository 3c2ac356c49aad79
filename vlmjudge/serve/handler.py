"""The HTTP side of `vlmjudge serve`: a listening socket that holds the advertised load, and
a request handler that answers every request with JSON, never a dropped connection.

Order of checks on a POST, each before any work it would waste: route, API key (before a
byte of the body is read), Content-Length against the body cap, the body read under a
per-read and a whole-body timeout, JSON decoding and field checks (`parse`), then
the judge. While the judge works, the handler watches the client's socket: when the
client disconnects, its request is cancelled (see `batcher`).
"""
from __future__ import annotations

import json
import logging
import select
import socket
import socketserver
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..wire import completion_body, error_body, options_completion_body
from .batcher import Cancelled, QueueFull
from .faults import BODY_FAULTS, mangled_body
from .parse import BadRequest, decode_json, parse_chat_body

log = logging.getLogger("vlmjudge.serve")

#: How often a waiting handler checks whether its client is still there.
POLL_S = 0.05
#: After an error answered without reading the body, at most this much of it is read and
#: dropped (briefly), so that closing the socket does not reset the client mid-send.
DRAIN_BYTES = 1024 * 1024
#: Routes open without the API key (load balancers probe it).
OPEN_ROUTES = ("/health",)


class ClientGone(Exception):
    """The client closed its connection while its request waited or ran."""


class HTTPServer(ThreadingHTTPServer):
    """A thread per connection, and a listen backlog of `backlog` (socketserver's default, 5,
    resets clients that connect at once)."""

    daemon_threads = True  # a handler stuck on a slow client never blocks shutdown

    def __init__(self, address: tuple[str, int], handler: type, backlog: int) -> None:
        self.request_queue_size = max(128, backlog)
        super().__init__(address, handler)

    def server_bind(self) -> None:
        """Bind without http.server's reverse-DNS lookup of the host (slow where DNS is absent)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "vlmjudge-serve"

    @property
    def app(self) -> Any:
        return self.server.app  # type: ignore[attr-defined]

    def setup(self) -> None:
        """Every socket read waits at most `read_timeout_s` (a half-sent request never holds a thread)."""
        self.timeout = self.app.limits.read_timeout_s
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (bad request line, unknown method, oversized headers) as JSON."""
        self.close_connection = True
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1"):  # an unparsed request line: answer as 1.1
            self.request_version = self.protocol_version
        status = HTTPStatus(code)
        self._send(code, error_body(message or status.phrase, "invalid_request_error" if code < 500
                                    else "server_error", code))

    # -- routes -------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_POST(self) -> None:
        self._guarded(self._post)

    def _guarded(self, route: Any) -> None:
        """Run a route; any exception it lets out becomes a 500 JSON error (or, once the
        response has started, a closed connection), never a silent drop."""
        self._responded = False
        try:
            route()
        except ClientGone:
            self.close_connection = True
        except Exception as exc:  # a bug or a broken judge: the client still gets an answer
            log.exception("handler failed on %s %s", self.command, self.path)
            self.close_connection = True
            if not self._responded:
                self._send(500, error_body(f"internal error: {type(exc).__name__}", "server_error", 500))

    def _get(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in OPEN_ROUTES and not self._authorized():
            return
        if path == "/health":
            self._send(200, {"status": "ok", **self.app.batcher.status()})
        elif path == "/v1/models":
            limits = self.app.limits
            self._send(200, {"object": "list", "data": [{
                "id": self.app.model_name, "object": "model", "created": 0, "owned_by": "vlmjudge",
                "max_model_len": limits.max_prompt_tokens + limits.max_tokens, "max_tokens": limits.max_tokens,
                "max_queue": limits.max_queue}]})
        else:
            self._send(404, error_body(f"no route {path}", "not_found", 404))

    def _post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if not self._authorized():
            return
        if path != "/v1/chat/completions":
            self._refuse(404, f"no route {path}", "not_found")
            return
        body = self._read_body()
        if body is None:
            return
        fault = self._inject_fault()
        if fault == "answered":
            return
        try:
            payload = decode_json(body, self.app.limits)
            model = payload.get("model") if isinstance(payload, dict) else None
            if isinstance(model, str) and model != self.app.model_name:
                self._send(404, error_body(f"model {model!r} is not served here (serving "
                                           f"{self.app.model_name!r})", "not_found", 404))
                return
            call = parse_chat_body(payload, self.app.limits, self.app.count_tokens)
        except BadRequest as exc:
            self._send(exc.status, error_body(str(exc), "invalid_request_error", exc.status))
            return
        self._answer(call, fault)

    def _answer(self, call: Any, fault: str | None) -> None:
        try:
            future = self.app.batcher.submit(call)
        except QueueFull as exc:
            self._send(503, error_body(str(exc), "server_busy", 503), headers=(("Retry-After", "1"),))
            return
        try:
            result = self._await(future)
        except ValueError as exc:  # the judge rejected the input (for example an option that is not one token)
            self._send(400, error_body(str(exc), "invalid_request_error", 400))
            return
        except (Cancelled, ClientGone):  # nobody to answer
            raise ClientGone() from None
        except Exception as exc:  # the judge broke on this request: the client may retry
            log.warning("judge failed: %s", exc)
            self._send(500, error_body(f"judge failed: {exc}", "server_error", 500))
            return
        if call.op == "generate":
            if not result.ok:
                self._send(500, error_body("the judge failed on this request", "server_error", 500))
                return
            payload = completion_body(self.app.model_name, result)
        elif not result:
            self._send(500, error_body("the judge gave no probabilities for this request", "server_error", 500))
            return
        else:
            payload = options_completion_body(self.app.model_name, result)
        self._send(200, payload, fault=fault)

    def _await(self, future: Future) -> Any:
        """The future's result, cancelling it (ClientGone) as soon as the client disconnects."""
        while not wait_for([future], timeout=POLL_S).done:
            if self._client_gone():
                log.debug("client %s went away: request %s", self.address_string(), self.app.batcher.cancel(future))
                raise ClientGone()
        return future.result()

    def _client_gone(self) -> bool:
        """True when the client has closed its end (readable, and a peek reads nothing)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (BlockingIOError, TimeoutError, InterruptedError):
            return False
        except OSError:  # reset or otherwise broken: nobody is there to answer
            return True

    # -- request body ---------------------------------------------------------------------
    def _authorized(self) -> bool:
        """Check the key from the headers alone; a refusal closes the connection unread."""
        if self.app.authorized(self.headers.get("Authorization")):
            return True
        self._refuse(401, "invalid or missing API key", "authentication_error")
        return False

    def _read_body(self) -> bytes | None:
        """The body, or None once an error has been sent: chunked bodies and a missing, bad or
        too large Content-Length are refused before reading; a slow body gets 408."""
        limits = self.app.limits
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self._refuse(411, "send the body with a Content-Length (chunked bodies are not accepted)",
                         "invalid_request_error")
            return None
        raw = self.headers.get("Content-Length")
        if raw is None:
            self._refuse(411, "Content-Length is required", "invalid_request_error")
            return None
        if not raw.strip().isdigit():
            self._refuse(400, f"bad Content-Length {raw[:40]!r}", "invalid_request_error")
            return None
        length = int(raw)
        if length > limits.max_body_bytes:
            self._refuse(413, f"the body has {length} bytes, over this server's limit of {limits.max_body_bytes}",
                         "invalid_request_error")
            return None
        chunks, got, deadline = [], 0, time.monotonic() + limits.body_timeout_s
        try:
            while got < length:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"body not complete after {limits.body_timeout_s} s")
                chunk = self.rfile.read1(min(65536, length - got))
                if not chunk:
                    raise ClientGone()
                chunks.append(chunk)
                got += len(chunk)
        except TimeoutError as exc:
            self.close_connection = True
            self._send(408, error_body(f"the body did not arrive in time ({got} of {length} bytes): {exc}",
                                       "timeout", 408))
            return None
        return b"".join(chunks)

    def _refuse(self, status: int, message: str, kind: str) -> None:
        """An error sent before the body was read: the connection closes after it, and a little of
        the unread body is drained first so that the client reads the answer, not a reset."""
        self.close_connection = True
        self._send(status, error_body(message, kind, status))
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.2)
            drained = 0
            while drained < DRAIN_BYTES:
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError as exc:  # timeout or reset: the client is done or gone either way
            log.debug("drain after %d: %s", status, exc)

    # -- faults and responses ---------------------------------------------------------------
    def _inject_fault(self) -> str | None:
        """None, a body fault to apply to the response, or "answered" when the fault replaced it."""
        faults = self.app.faults
        kind = faults.draw() if faults is not None else None
        if kind is None or kind in BODY_FAULTS:
            return kind
        log.debug("injecting fault %s", kind)
        if kind == "rate_limit":
            self._send(429, error_body("injected fault: rate limited", "rate_limit_error", 429))
        elif kind == "server_error":
            self._send(500, error_body("injected fault: server error", "server_error", 500))
        else:
            if kind == "delay":
                time.sleep(faults.delay_s)  # past the client's timeout: it has given up by now
            self._drop()
        return "answered"

    def _drop(self) -> None:
        """Close the connection without a response (a fault injected on purpose)."""
        self.close_connection = True
        self._responded = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError as exc:  # the client has already closed it: the connection is gone either way
            log.debug("drop: %s", exc)

    def _send(self, status: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = (),
              fault: str | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        content_type = "application/json"
        if fault is not None:
            log.debug("injecting fault %s", fault)
            data, content_type = mangled_body(fault, data)
        self._responded = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError as exc:  # broken pipe, reset, timeout: the client went away before the response
            log.debug("client went away before the response: %s", exc)
            self.close_connection = True
