"""A local server in a child process, for as long as a block runs: the browser tests' Space apps,
the vLLM suite's one `vlmjudge serve`, and the benchmark's served backend all start, wait for and
stop their server this one way, so a server that dies or stays silent is reported with its log."""
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path


class ServerDidNotStart(RuntimeError):
    """The server exited, or did not answer its URL in time; the message ends with its log's tail."""


def free_port() -> int:
    """A TCP port on the loopback that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    """Whether `url` answers 200 now (a refused or reset connection is "not yet")."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def running_server(argv: Sequence[str], ready_url: str, log: str | os.PathLike, *, timeout_s: float,
                   env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
                   poll_s: float = 1.0, stop_s: float = 60.0) -> Iterator[subprocess.Popen]:
    """Run `argv` (output to `log`) until `ready_url` answers 200, yield the process, and stop it
    when the block ends (terminate, then kill after `stop_s`). `ServerDidNotStart` if it exits or
    stays silent past `timeout_s`."""
    log = Path(log)
    with open(log, "w") as out:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, env=dict(env) if env else None,
                                cwd=cwd)
    try:
        deadline = time.monotonic() + timeout_s
        while not answers(ready_url):
            if proc.poll() is not None:
                raise ServerDidNotStart(f"{argv[0]} exited ({proc.returncode}); {log}: {log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise ServerDidNotStart(f"{ready_url} did not answer in {timeout_s:.0f} s; {log}: "
                                        f"{log.read_text()[-3000:]}")
            time.sleep(poll_s)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=stop_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
