"""A loopback HTTP proxy that puts faults between the openai backend and a real server: each
request takes the next scripted fault (or none), and `rewrite` may edit every JSON answer. A
test fixture: loopback only, one thread per connection, bounded bodies and timeouts."""
import http.client
import json
import socket
import struct
import threading
import time
from collections import deque
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: reset: the connection is reset half-way through the real answer; unavailable: a 503 in its
#: place; slow: the real answer after `slow_s` (past the client's timeout); garbled: the real
#: answer's first half, sent as a whole 200 body.
FAULTS = ("reset", "unavailable", "slow", "garbled")
MAX_BODY = 64 << 20


class _Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # a stuck client costs one thread for two minutes at most

    def log_message(self, *args):
        """Quiet."""

    def _upstream(self, method, body=None):
        host, port = self.server.upstream
        conn = http.client.HTTPConnection(host, port, timeout=300)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            conn.request(method, self.path, body, headers)
            response = conn.getresponse()
            return response.status, response.getheader("Content-Type", "application/json"), response.read()
        finally:
            conn.close()

    def _send(self, status, content_type, data):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(*self._upstream("GET"))

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        if length > MAX_BODY:
            return self._send(413, "application/json", b'{"error": {"message": "too large"}}')
        body = self.rfile.read(length)
        s = self.server
        with s.lock:
            fault = s.faults.popleft() if s.faults else None
            s.seen.append(fault)
        if fault == "unavailable":
            return self._send(503, "application/json", b'{"error": {"message": "overloaded"}}')
        if fault == "slow":
            time.sleep(s.slow_s)
        status, content_type, data = self._upstream("POST", body)
        if status == 200 and s.rewrite is not None:
            data = json.dumps(s.rewrite(json.loads(body), json.loads(data))).encode()
        if fault == "garbled":
            return self._send(200, content_type, data[: len(data) // 2])
        if fault == "reset":
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()  # linger 0: the peer sees a reset, not a clean end
            return None
        return self._send(status, content_type, data)


@contextmanager
def fault_proxy(upstream_url, slow_s=3.0):
    """A proxy to `upstream_url` (http://127.0.0.1:PORT/...): yields the server, whose `faults`
    (a deque), `rewrite` (None, or f(request body, answer) -> answer) and `seen` a test sets and
    reads, and whose `url` is the upstream URL with the proxy's port."""
    from urllib.parse import urlsplit
    parts = urlsplit(upstream_url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    server.daemon_threads = True
    server.upstream, server.slow_s = (parts.hostname, parts.port), slow_s
    server.faults, server.rewrite, server.seen, server.lock = deque(), None, [], threading.Lock()
    server.url = f"{parts.scheme}://127.0.0.1:{server.server_address[1]}{parts.path}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
