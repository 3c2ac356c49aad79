"""The openai backend's client cost per request: CPU seconds of this process for N chat requests
at a given concurrency against a loopback stub server (its own process), beside the floor of the
same requests written with `http.client` and `json` on one connection per thread.

    python -m bench.openai_client --requests 556 --concurrency 128

Why: on 2 busy cores a served run's wall time follows the CPU of every process in it, the client
included (issue 51). The bodies are shaped as TerraVis' served requests (a system prompt, one image
as a file URL with a uuid, a question, the options' token ids); the stub answers each with a canned
chat completion carrying the logprobs of those ids. Both paths send the same bodies, side by side.
"""
from __future__ import annotations

import argparse
import http.client
import json
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

#: The stub server: canned replies over HTTP/1.1 keep-alive, one thread per connection.
STUB = r'''
import json, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
row = {"token": "token_id:9", "logprob": -0.1, "top_logprobs": [{"token": "token_id:9", "logprob": -0.1},
                                                                {"token": "token_id:7", "logprob": -2.4}]}
REPLY = json.dumps({"id": "b", "object": "chat.completion", "created": 1, "model": "bench",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "token_id:9"},
                                 "finish_reason": "length", "logprobs": {"content": [row]}}],
                    "usage": {"prompt_tokens": 1711, "completion_tokens": 1, "total_tokens": 1712}}).encode()
class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)
    def log_message(self, *args):
        pass
ThreadingHTTPServer.request_queue_size = 1024  # 128 clients connect at once
server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
'''


def bodies(n: int) -> list[Any]:
    """`n` request bodies shaped as TerraVis' served probability reads over 16 images."""
    from vlmjudge.backends.openai import WireBody

    system = "You check an image for violations of how the world works. " * 20
    return [WireBody({"model": "bench", "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": 20,
                      "messages": [{"role": "system", "content": system},
                                   {"role": "user", "content": [
                                       {"type": "image_url", "image_url": {"url": f"file:///media/{i % 16}.ppm"},
                                        "uuid": f"sha256:{i % 16:064x}"},
                                       {"type": "text", "text": f"Check {i % 18}: is it violated? Answer Yes or No."}]}]},
                     {"logprob_token_ids": [9, 7], "return_tokens_as_token_ids": True}) for i in range(n)]


def cpu_seconds(run: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall, CPU) seconds of this process while `run()` runs, and what it returned."""
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = run()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter() - start, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result


def answered(replies: list[Any]) -> int:
    """How many replies are chat completions with a choice (a figure over failed requests means nothing)."""
    return sum(isinstance(r, dict) and isinstance(r.get("choices"), list) and bool(r["choices"]) for r in replies)


def judge_path(base: str, concurrency: int) -> Callable[[list[Any]], list[dict]]:
    """The openai backend's own path: its request threads, retry loop, bounded transport and parsing."""
    from vlmjudge.backends.openai import OpenAIJudge

    judge = OpenAIJudge("bench", base_url=base, concurrency=concurrency, cache=None)
    return lambda sent: list(judge._parallel(list(range(len(sent))), lambda i: judge._create(sent[i])).values())


def floor_path(port: int, pool: ThreadPoolExecutor) -> Callable[[list[Any]], list[dict]]:
    """The same requests with nothing but `http.client` and `json`, one connection per thread of `pool`."""
    local = threading.local()

    def one(body: Any) -> dict:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body.merged()).encode(),
                     headers={"Content-Type": "application/json", "Authorization": "Bearer EMPTY"})
        return json.loads(conn.getresponse().read())

    return lambda sent: list(pool.map(one, sent))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.openai_client", description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=556, help="requests per path (default 556: TerraVis, 16 images)")
    p.add_argument("--concurrency", type=int, default=128, help="requests in flight (default 128: a vLLM server's)")
    args = p.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1:
        p.error("--requests and --concurrency must be at least 1")
    server = subprocess.Popen([sys.executable, "-c", STUB], stdout=subprocess.PIPE, text=True)
    try:
        with ThreadPoolExecutor(args.concurrency) as pool:
            return _measure(server, pool, args.requests, args.concurrency)
    except Exception as exc:  # a stub that did not start, a request that failed: one line, no figure
        print(f"bench.openai_client: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        server.kill()
        server.wait()


def _measure(server: subprocess.Popen, pool: ThreadPoolExecutor, requests: int, concurrency: int) -> int:
    """Both paths, warmed, then timed side by side; exit 2 unless every reply came back whole."""
    line = server.stdout.readline().strip()
    if not line.isdigit():
        raise RuntimeError(f"the stub server did not start (it printed {line!r}, not its port)")
    port, sent = int(line), bodies(requests)
    paths = {"openai backend": judge_path(f"http://127.0.0.1:{port}/v1", concurrency),
             "http.client floor": floor_path(port, pool)}
    for path in paths.values():
        path(sent[:concurrency])  # warm: connections open, threads started
    print(f"client CPU per request, {requests} requests at concurrency {concurrency} (loopback stub):")
    per_request = {}
    for name, path in paths.items():
        wall, cpu, replies = cpu_seconds(lambda: path(sent))
        if answered(replies) != requests:
            raise RuntimeError(f"{name}: {answered(replies)} of {requests} replies were chat completions")
        per_request[name] = cpu / requests
        print(f"{name:18s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  {1000 * cpu / requests:6.2f} ms/request")
    ratio = per_request["openai backend"] / max(per_request["http.client floor"], 1e-9)
    print(f"openai backend / floor: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
