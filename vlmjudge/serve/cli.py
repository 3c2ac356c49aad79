"""The `vlmjudge serve` command: its flags, then the engine's server in this process's place.

`vlmjudge serve ...` (through `vlmjudge.cli`) and `python -m vlmjudge.serve ...` both land here.
The engine replaces this process (`os.execvpe`), so Ctrl-C and a supervisor's signals reach it.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys

from .engine import ENGINES, ServeOptions, cpu_only, engine_argv, engine_env, engine_installed, install_hint


def configure_serve(parser: argparse.ArgumentParser) -> None:
    """Add `vlmjudge serve`'s flags to its sub-parser."""
    parser.add_argument("--model", required=True, help="Hub id or checkpoint folder the engine loads")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="(default: 8000)")
    parser.add_argument("--dtype", default=None, help="float32, bfloat16, ... (default: the engine's)")
    parser.add_argument("--served-model-name", default=None,
                        help="the model name clients send (default: --model)")
    parser.add_argument("--max-logprobs", type=int, default=-1,
                        help="vLLM's cap on logprobs per token (default: -1, the whole vocabulary, "
                             "which choice_probs needs to find every option)")
    parser.add_argument("--engine", choices=ENGINES, default="vllm", help="(default: vllm)")
    parser.add_argument("--print-command", action="store_true",
                        help="print the engine's command line and exit instead of running it")
    parser.add_argument("engine_args", nargs=argparse.REMAINDER,
                        help="after --: more flags for the engine, passed as they are")
    parser.set_defaults(func=run_serve)


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    """The parsed flags as ServeOptions (a leading `--` before the engine's flags dropped)."""
    extra = list(args.engine_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    return ServeOptions(model=args.model, host=args.host, port=args.port, dtype=args.dtype,
                        served_model_name=args.served_model_name, max_logprobs=args.max_logprobs,
                        engine=args.engine, extra=tuple(extra))


def run_serve(args: argparse.Namespace) -> int:
    """Print the engine's command, or become the engine; 2 when the engine is not installed."""
    opts = options_from_args(args)
    argv = engine_argv(opts, sys.executable)
    added = engine_env(opts, dict(os.environ), cpu_only())
    if args.print_command:
        print(" ".join([f"{k}={shlex.quote(v)}" for k, v in added.items()] + [shlex.join(argv)]))
        return 0
    if not engine_installed(opts.engine):
        print(f"vlmjudge serve: {install_hint(opts.engine)}", file=sys.stderr)
        return 2
    print(f"vlmjudge serve: starting {opts.engine} at http://{opts.host}:{opts.port}/v1", file=sys.stderr, flush=True)
    os.execvpe(argv[0], argv, {**os.environ, **added})
    return 0  # pragma: no cover - execvpe does not return


def main(argv: list[str] | None = None) -> int:
    """`python -m vlmjudge.serve ...`: the same as `vlmjudge serve ...`."""
    parser = argparse.ArgumentParser(prog="vlmjudge serve", description="start vLLM's (or SGLang's) OpenAI server "
                                     "with the settings the methods need")
    configure_serve(parser)
    return run_serve(parser.parse_args(argv))
