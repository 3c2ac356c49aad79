"""The openai backend's HTTP transport: one deadline for a whole request, a cap on its reply.

Why: httpx's timeouts bound each read, not a request, so a server that drips a byte a second
holds a request as long as it likes, and nothing bounds a body. Inside `bounded(total_s,
max_bytes)` every connect, read and write of the calling thread's request waits at most until
its deadline (`DeadlineBackend`, under httpcore's connection pool), a body past `max_bytes` is
refused (`ResponseTooLarge`), and compression is declined, so the bytes counted are the bytes
kept. Outside `bounded` (the Batch API's files) httpx's per-read timeout is all there is.
"""
from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

#: The most bytes one write waits for at a time, so a server that reads slowly meets the deadline too.
WRITE_PIECE = 1 << 16
#: Idle connections a thread's pool keeps open: its thread makes one request at a time.
KEEPALIVE_PER_THREAD = 1
#: What a bounded request accepts as its reply's Content-Encoding: none, so its size is what arrives.
PLAIN_ENCODINGS = ("", "identity")
#: httpcore's errors, mapped to httpx's of the same name as httpx's own transport does.
_CORE_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
                httpcore.UnsupportedProtocol)

_thread = threading.local()


class ResponseTooLarge(Exception):
    """A reply refused unread: its body passed the request's cap, or came compressed although
    none was asked for (its decoded size would be unbounded). Not an httpx error on purpose:
    the SDK lets it through unwrapped, and the client fails the request without retrying."""


@dataclass(frozen=True)
class Bounds:
    """The deadline (`time.monotonic()`) and the byte cap of the request a thread is making."""

    deadline: float
    max_bytes: int

    def left(self) -> float:
        return self.deadline - time.monotonic()


@contextmanager
def bounded(total_s: float, max_bytes: int) -> Iterator[Bounds]:
    """Bound the HTTP request this thread makes inside the block (redirects included)."""
    outer = getattr(_thread, "bounds", None)
    _thread.bounds = Bounds(time.monotonic() + total_s, max_bytes)
    try:
        yield _thread.bounds
    finally:
        _thread.bounds = outer


def current_bounds() -> Bounds | None:
    """The bounds of this thread's request; None outside `bounded`."""
    return getattr(_thread, "bounds", None)


def _until_deadline(timeout: float | None, expired: type[Exception]) -> float | None:
    """The timeout of one network operation: `timeout` cut to what the deadline leaves; `expired`
    (an httpcore timeout) once nothing is left."""
    bounds = current_bounds()
    if bounds is None:
        return timeout
    left = bounds.left()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every operation ends by the deadline of the request using it."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _until_deadline(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), WRITE_PIECE):
            self._inner.write(buffer[start:start + WRITE_PIECE], _until_deadline(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        timeout = _until_deadline(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's synchronous sockets, each connection a `DeadlineStream`."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        timeout = _until_deadline(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        timeout = _until_deadline(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


@contextmanager
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    """httpcore's errors as httpx's (the SDK reads httpx's timeouts as timeouts)."""
    try:
        yield
    except _CORE_ERRORS as exc:
        mapped = next(getattr(httpx, c.__name__) for c in type(exc).__mro__ if hasattr(httpx, c.__name__))
        raise mapped(str(exc) or type(exc).__name__, request=request) from exc


class BoundedBody(httpx.SyncByteStream):
    """A reply's body, refused past its request's cap or deadline."""

    def __init__(self, inner: Any, request: httpx.Request, bounds: Bounds | None) -> None:
        self._inner, self._request, self._bounds = inner, request, bounds

    def __iter__(self) -> Iterator[bytes]:
        seen, bounds = 0, self._bounds
        with _as_httpx_errors(self._request):
            for chunk in self._inner:
                seen += len(chunk)
                if bounds is not None and seen > bounds.max_bytes:
                    raise ResponseTooLarge(f"the reply passed its cap of {bounds.max_bytes} bytes")
                if bounds is not None and bounds.left() <= 0:
                    raise httpx.ReadTimeout("the request's deadline passed while its body arrived",
                                            request=self._request)
                yield chunk

    def close(self) -> None:
        if hasattr(self._inner, "close"):
            self._inner.close()


class BoundedTransport(httpx.BaseTransport):
    """An httpx transport over httpcore's connection pools on `DeadlineBackend` (through `proxy`,
    an http(s) proxy URL, where one is given) that holds every bounded request to its bounds.

    Why one pool per thread: httpcore's pool scans all its connections and queued requests under one
    lock for every request it starts and ends, so 128 threads sharing one pool spent a third of the
    served run's client CPU in that scan. A thread's own pool holds the connection it reuses; the
    pools of threads that have ended are closed when the next pool opens, and all of them by `close`.
    """

    def __init__(self, proxy: str | None = None) -> None:
        # A thread makes one request at a time: one connection kept alive serves it.
        self._settings: dict[str, Any] = {"ssl_context": httpx.create_ssl_context(), "max_connections": None,
                                          "max_keepalive_connections": KEEPALIVE_PER_THREAD, "keepalive_expiry": 5.0,
                                          "network_backend": DeadlineBackend()}
        self._proxy = None if proxy is None else httpx.Proxy(proxy)
        if self._proxy is not None and self._proxy.url.scheme not in ("http", "https"):
            raise ValueError(f"the openai backend takes an http or https proxy, not {self._proxy.url.scheme} ({proxy})")
        self._pools: dict[int, Any] = {}  # thread ident -> that thread's pool
        self._pools_lock = threading.Lock()

    def _pool(self) -> Any:
        """The calling thread's connection pool (opened at its first request)."""
        ident = threading.get_ident()
        pool = self._pools.get(ident)
        if pool is None:
            pool = self._open_pool()
            with self._pools_lock:
                alive = {t.ident for t in threading.enumerate()}
                ended = [self._pools.pop(i) for i in list(self._pools) if i not in alive]
                self._pools[ident] = pool
            for old in ended:
                old.close()
        return pool

    def _open_pool(self) -> Any:
        if self._proxy is None:
            return httpcore.ConnectionPool(**self._settings)
        via = self._proxy
        return httpcore.HTTPProxy(
            proxy_url=httpcore.URL(scheme=via.url.raw_scheme, host=via.url.raw_host, port=via.url.port,
                                   target=via.url.raw_path),
            proxy_auth=via.raw_auth, proxy_headers=via.headers.raw, proxy_ssl_context=via.ssl_context,
            **self._settings)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        bounds = current_bounds()
        headers = request.headers.raw
        if bounds is not None:  # the body's size on the wire is then its size in memory
            headers = [(k, v) for k, v in headers if k.lower() != b"accept-encoding"] + [(b"Accept-Encoding",
                                                                                          b"identity")]
        url = httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                           target=request.url.raw_path)
        with _as_httpx_errors(request):
            reply = self._pool().handle_request(httpcore.Request(method=request.method, url=url, headers=headers,
                                                               content=request.stream,
                                                               extensions=request.extensions))
        if bounds is not None:
            try:
                _check_head(reply, bounds)
            except ResponseTooLarge:
                reply.close()
                raise
        return httpx.Response(status_code=reply.status, headers=reply.headers,
                              stream=BoundedBody(reply.stream, request, bounds), extensions=reply.extensions)

    def close(self) -> None:
        with self._pools_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()


def _check_head(reply: httpcore.Response, bounds: Bounds) -> None:
    """Refuse, before reading its body, a reply that declares more than the cap or is compressed."""
    head = httpx.Headers(reply.headers)
    encoding = head.get("content-encoding", "").strip().lower()
    if encoding not in PLAIN_ENCODINGS:
        raise ResponseTooLarge(f"the reply came compressed (Content-Encoding: {encoding}) although none was "
                               "asked for: its size cannot be bounded")
    declared = head.get("content-length", "")
    if declared.isdigit() and int(declared) > bounds.max_bytes:
        raise ResponseTooLarge(f"the reply declares {declared} bytes, above its cap of {bounds.max_bytes}")


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY), unless
    NO_PROXY exempts its host; None for a direct connection."""
    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def bounded_http_client(base_url: str, timeout_s: float) -> httpx.Client:
    """The httpx client the SDK sends through: `BoundedTransport` (the environment's proxy for
    `base_url` resolved here, as the client reaches no other host), redirects followed."""
    transport = BoundedTransport(proxy_for(base_url))
    return httpx.Client(transport=transport, trust_env=False, timeout=timeout_s, follow_redirects=True)
