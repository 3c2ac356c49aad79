"""The `vlmjudge serve` command: its flags, and loading the judge and serving until interrupted.

`vlmjudge serve ...` (through `vlmjudge.cli`) and `python -m vlmjudge.serve ...` both land here.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .faults import FaultInjector
from .parse import ServeLimits
from .server import JudgeServer


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
    from ..judge import load_judge
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
