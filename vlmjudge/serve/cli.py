"""The `vlmjudge serve` command: its flags, then the engine's server in this process's place.

`vlmjudge serve ...` (through `vlmjudge.cli`) and `python -m vlmjudge.serve ...` both land here.
The engine replaces this process (`os.execvpe`), so Ctrl-C and a supervisor's signals reach it.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Mapping

from ..backends.vllm_cpu import cpu_only
from .engine import ENGINES, LOOPBACK, ServeOptions, engine_argv, engine_env, engine_installed, install_hint

#: Bind addresses that listen on every interface of the machine.
EVERY_INTERFACE = ("0.0.0.0", "::")


def configure_serve(parser: argparse.ArgumentParser) -> None:
    """Add `vlmjudge serve`'s flags to its sub-parser."""
    parser.add_argument("--model", required=True, help="Hub id or checkpoint folder the engine loads")
    parser.add_argument("--host", default="127.0.0.1",
                        help="bind address (default: 127.0.0.1, loopback only; 0.0.0.0 serves every interface, "
                             "with a warning)")
    parser.add_argument("--port", type=int, default=8000, help="1 to 65535 (default: 8000)")
    parser.add_argument("--dtype", default=None, help="float32, bfloat16, ... (default: the engine's)")
    parser.add_argument("--served-model-name", default=None,
                        help="the model name clients send (default: --model)")
    parser.add_argument("--max-logprobs", type=int, default=-1,
                        help="vLLM's cap on logprobs per token: -1 (the default: the whole vocabulary, "
                             "which choice_probs needs to find every option) or 1 and more")
    parser.add_argument("--media-root", default=None, metavar="DIR",
                        help="a folder clients on this machine may send images from as file:// URLs "
                             "(vLLM's --allowed-local-media-path; clients pass a folder inside it as "
                             "media_dir), so each image is read from disk instead of sent as base64")
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
                        engine=args.engine, media_root=args.media_root, extra=tuple(extra))


def flag_problem(opts: ServeOptions) -> str | None:
    """Why the flags cannot start a server, in one line, or None.

    `--host ''` is refused: the engine would bind every interface without anyone having asked for
    that (0.0.0.0 says so on purpose). vLLM accepts `--max-logprobs` of -1 or more, but 0 lets no
    request ask for a logprob, which every `choice_probs` does; so -1 or 1 and more.

    Examples:
        >>> flag_problem(ServeOptions("m", port=0))
        '--port must be 1 to 65535, got 0'
        >>> flag_problem(ServeOptions("m", max_logprobs=0)).split(";")[0]
        '--max-logprobs must be -1 (the whole vocabulary) or 1 and more, got 0'
        >>> flag_problem(ServeOptions("m", host="0.0.0.0")) is None
        True
    """
    if not opts.host.strip():
        return (f"--host {opts.host!r} would bind every interface; name the address to serve on "
                f"(127.0.0.1, the default, for this machine only; 0.0.0.0 for every interface on purpose)")
    if len(opts.host.split()) != 1 or opts.host != opts.host.strip():
        return f"--host {opts.host!r} holds spaces; name one address, such as 127.0.0.1"
    if not 1 <= opts.port <= 65535:
        return f"--port must be 1 to 65535, got {opts.port}"
    if opts.max_logprobs == 0 or opts.max_logprobs < -1:
        return (f"--max-logprobs must be -1 (the whole vocabulary) or 1 and more, got {opts.max_logprobs}; "
                f"vLLM takes -1 or more, and 0 refuses every request for logprobs, which choice_probs makes")
    if opts.media_root is not None:
        if opts.engine != "vllm":
            return "--media-root is vLLM's --allowed-local-media-path; SGLang has no such setting"
        if not os.path.isdir(opts.media_root):
            return f"--media-root {opts.media_root!r} is not a folder; name the folder clients write images into"
    return None


def exposure_warning(opts: ServeOptions, environ: Mapping[str, str]) -> str | None:
    """A warning when the server listens beyond this machine without an API key (`-- --api-key`,
    or vLLM's `VLLM_API_KEY`): the engine then answers anyone who can reach the port.

    Examples:
        >>> exposure_warning(ServeOptions("m", host="0.0.0.0"), {}).split(":")[2]
        ' serving on every interface with no API key'
        >>> exposure_warning(ServeOptions("m", host="0.0.0.0", extra=("--api-key", "k")), {}) is None
        True
    """
    keyed = any(arg == "--api-key" or arg.startswith("--api-key=") for arg in opts.extra)
    if opts.host in LOOPBACK or keyed or (opts.engine == "vllm" and environ.get("VLLM_API_KEY")):
        return None
    where = "every interface" if opts.host in EVERY_INTERFACE else opts.host
    return (f"vlmjudge serve: warning: serving on {where} with no API key: anyone who can reach this "
            f"machine can use the model (add -- --api-key KEY, or keep --host 127.0.0.1)")


def run_serve(args: argparse.Namespace) -> int:
    """Print the engine's command, or become the engine; 2 when a flag is out of range or the
    engine is not installed."""
    opts = options_from_args(args)
    problem = flag_problem(opts)
    if problem is not None:
        print(f"vlmjudge serve: error: {problem}", file=sys.stderr)
        return 2
    warning = exposure_warning(opts, os.environ)
    if warning is not None:
        print(warning, file=sys.stderr)
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
