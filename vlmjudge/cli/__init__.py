"""The `vlmjudge` command: core commands, and one sub-command per method.

Method sub-commands come from the `vlmjudge.commands` entry points (each a `configure(parser)`
that adds its own sub-commands), so the core imports no method. What the commands share lives
beside this file: `flags` (judge flags), `intake` (inputs and their check), `exits` (statuses
and failures), `help`, `resume` and `scoring` (the score command, written once).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .. import __version__
from ..registry import command_hooks


def _cmd_modules_install(args: argparse.Namespace) -> int:
    """Seed evaluate's module cache with the metrics/ scripts and say where each went."""
    from ..hub.evaluate_modules import install_modules
    installed = install_modules(args.metrics_dir, args.names or None)
    for name, module in installed.items():
        print(f"installed {name} -> {module}")
    return 0


def _cmd_space_push(args: argparse.Namespace) -> int:
    """Stage a metric's Space folder, or upload it to the Hub."""
    from ..hub.spaces import push_space, stage_space
    if args.stage:
        staged = stage_space(args.folder, args.stage, wheel=args.wheel)
        print(f"staged {', '.join(p.name for p in staged)} in {args.stage}")
        return 0
    if not args.repo:
        raise SystemExit("vlmjudge space push: give --repo ORG/NAME to upload, or --stage DIR to write the folder")
    uploaded = push_space(args.folder, args.repo, wheel=args.wheel, private=args.private)
    print(f"pushed {', '.join(uploaded)} to Space {args.repo}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The whole `vlmjudge` parser: core commands, then each registered method's sub-commands."""
    from .info import run_info

    parser = argparse.ArgumentParser(prog="vlmjudge", description="Multimodal-LLM judges for text-to-image outputs.")
    parser.add_argument("--version", action="version", version=f"vlmjudge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="versions, backends, GPUs and registered methods")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=run_info)

    modules = sub.add_parser("evaluate-modules", help="make evaluate.load('<name>') work by bare name")
    modules_sub = modules.add_subparsers(dest="modules_command", required=True)
    install = modules_sub.add_parser("install", help="seed evaluate's module cache with the metrics/ scripts")
    install.add_argument("--metrics-dir", default=None, help="default: the installed project's metrics/")
    install.add_argument("names", nargs="*", help="only these metrics")
    install.set_defaults(func=_cmd_modules_install)

    space = sub.add_parser("space", help="Hub Spaces for the metrics")
    space_sub = space.add_subparsers(dest="space_command", required=True)
    push = space_sub.add_parser("push", help="upload a metric as a Gradio Space, with the vlmjudge wheel bundled")
    push.add_argument("folder", help="a metric name (terravis, viescore2, fager, regeneration) or a metric folder")
    push.add_argument("--repo", default=None, help="the Space to create or update, ORG/NAME")
    push.add_argument("--stage", default=None, metavar="DIR",
                      help="write the Space folder into DIR and upload nothing")
    push.add_argument("--wheel", default=None, metavar="PATH",
                      help="the vlmjudge wheel to bundle (default: build one from this checkout; "
                           "required when vlmjudge is installed from a wheel)")
    push.add_argument("--private", action="store_true")
    push.set_defaults(func=_cmd_space_push)

    from .compare import configure_compare
    configure_compare(sub)
    from ..benchmark.cli import configure_benchmark
    configure_benchmark(sub)
    from .annotate import configure_annotate
    configure_annotate(sub.add_parser("annotate", help="collect human labels by a method's protocol (a Gradio app)"))

    from ..serve.cli import configure_serve
    configure_serve(sub.add_parser("serve", help="start vLLM's OpenAI-compatible server with the judges' settings"))
    from .agreement import configure_agreement
    configure_agreement(sub)

    for name, hook in sorted(command_hooks().items()):
        method_parser = sub.add_parser(name, help=f"{name} commands")
        method_parser.set_defaults(judge_method=name)  # whose default model judge_from_args loads without --model
        try:
            hook.load()(method_parser)
        except ImportError as exc:
            method_parser.set_defaults(func=lambda _a, _e=exc, _n=name: _broken(_n, _e))
    return parser


def _broken(name: str, exc: Exception) -> int:
    """A method whose sub-commands cannot import: one line, status 2, the other commands still work."""
    print(f"vlmjudge {name}: unavailable ({exc})", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """The console script `vlmjudge`: parse, run the chosen command, and exit as `exits` says."""
    from .exits import run_command
    args = build_parser().parse_args(argv)
    hint = getattr(args, "resume_hint", None)  # a command without a response cache says what a rerun does
    return run_command(lambda: args.func(args), "vlmjudge", **({"resume_hint": hint} if hint else {}))
