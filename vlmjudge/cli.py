"""The `vlmjudge` command: shared flags, core commands, and one sub-command per method.

Method sub-commands come from the `vlmjudge.commands` entry points (each a
`configure(parser)` that adds its own sub-commands), so the core imports no method.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Any, Sequence

from . import __version__
from .intake import CommandError, looks_like_path
from .registry import command_hooks, list_methods

OPTIONAL_LIBS = ("torch", "torchvision", "transformers", "accelerate", "evaluate", "datasets", "torchmetrics",
                 "xgrammar", "openai", "ray", "gradio", "diffusers", "lightning")


def add_judge_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every judging command shares; each help says what happens without the flag."""
    g = parser.add_argument_group("judge")
    g.add_argument("--model", help="the judge: a Hub id, a local checkpoint folder, a server's model name, or a "
                                   "replay JSONL of recorded answers (default: the method's default model)")
    g.add_argument("--revision", default=None, help="Hub revision: branch, tag or commit (default: the main branch)")
    g.add_argument("--backend", default="transformers",
                   help="how the judge runs: transformers (in this process), openai (a server, see --base-url), "
                        "replay (recorded answers) or module:Class (default: transformers)")
    g.add_argument("--base-url", default=None,
                   help="an OpenAI-compatible server, e.g. http://HOST:8000/v1 (vlmjudge serve, vLLM, SGLang); "
                        "implies --backend openai (default: none, the model runs in this process)")
    g.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    g.add_argument("--dtype", default=None, help="bfloat16, float16, float32 (default: the backend's)")
    g.add_argument("--batch-size", type=int, default=8, help="requests per model call (default: 8)")
    g.add_argument("--cache", default=None,
                   help="SQLite file of the judge's answers; a rerun with the same file resumes from it "
                        "(default: no cache, unless the command says where it keeps one)")
    g.add_argument("--key-fields", default=None,
                   help="replay backend: comma-separated meta fields that key the answers, e.g. "
                        "item_id,question_id (default: the request's content)")
    g.add_argument("--out", default=None, help="where results go (default: the command's own, see its description)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def judge_from_args(args: argparse.Namespace, default_model: str | None = None) -> Any:
    """A judge from the shared flags, loaded as every face loads one (`vlmjudge.faces`): without
    --model, the method's default model (`default_model`, else that of the method whose
    sub-command runs); a --model that cannot load is one clear line, at once."""
    from .faces.loading import judge_recipe
    model = args.model or default_model or _default_model(args)
    if not model:
        raise CommandError("--model is required (this command has no default model)")
    if args.backend == "transformers" and not getattr(args, "base_url", None) and looks_like_path(model) \
            and not os.path.isdir(os.path.expanduser(model)):
        raise CommandError(f"--model {model}: no such checkpoint folder")
    extra: dict[str, Any] = {"batch_size": args.batch_size}
    if getattr(args, "key_fields", None):
        extra["key_fields"] = tuple(args.key_fields.split(","))
    backend = args.backend
    if getattr(args, "base_url", None):
        if backend == "transformers":  # the default, and in-process: a server URL means the openai backend
            backend = "openai"
        elif backend != "openai":
            raise SystemExit(f"--base-url is for the openai backend, not --backend {backend}")
        extra["base_url"] = args.base_url
    recipe = judge_recipe(model=os.path.expanduser(model) if looks_like_path(model) else model, backend=backend,
                          revision=getattr(args, "revision", None), device=getattr(args, "device", None),
                          dtype=getattr(args, "dtype", None), cache=args.cache, judge_kwargs=extra,
                          where="--model")
    try:
        return recipe.load()
    except (OSError, ValueError, ImportError) as exc:  # Hub and file errors are OSErrors
        from .cache import CacheFileError
        if isinstance(exc, CacheFileError):
            raise
        raise CommandError(f"cannot load --model {model}: {_first_line(exc)}") from None


#: What each backend needs installed, checked without importing it (importing is slow).
BACKEND_NEEDS = {"transformers": ("torch", "transformers"), "openai": ("openai",), "replay": ()}


def _version_of(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


def collect_info() -> dict[str, Any]:
    """Versions, importable backends, GPUs and registered methods."""
    from importlib.util import find_spec

    from .judge import BACKENDS
    libs = {name: _version_of(name) for name in OPTIONAL_LIBS}
    gpus: list[str] = []
    if find_spec("torch") is not None:
        import torch
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    backends = {}
    for name, target in BACKENDS.items():
        missing = [lib for lib in (*BACKEND_NEEDS.get(name, ()), target.split(":")[0]) if find_spec(lib) is None]
        backends[name] = "ok" if not missing else f"unavailable: missing {', '.join(missing)}"
    methods = {name: (f"error: {spec}" if isinstance(spec, Exception) else
                      {"inputs": list(spec.inputs), "score_range": list(spec.score_range)})
               for name, spec in list_methods().items()}
    from .families import FAMILIES
    families = {f.model_type: f.name for f in FAMILIES.values()}  # the transformers backend's judges
    return {"vlmjudge": __version__, "python": platform.python_version(), "libraries": libs,
            "backends": backends, "gpus": gpus, "methods": methods, "families": families}


def _print_section(title: str, rows: dict, width: int = 13) -> None:
    """One `vlmjudge info` section: its title, then a name and its value per line."""
    print(f"{title}:")
    for name, value in rows.items():
        print(f"  {name:{width}s} {value}")


def _cmd_info(args: argparse.Namespace) -> int:
    info = collect_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"vlmjudge {info['vlmjudge']} (Python {info['python']})")
    _print_section("libraries", info["libraries"])
    _print_section("backends", info["backends"])
    print(f"GPUs: {', '.join(info['gpus']) or 'none'}")
    _print_section("methods", info["methods"])
    _print_section("judge families (transformers backend)", info["families"], width=15)
    return 0


def _cmd_modules_install(args: argparse.Namespace) -> int:
    from .hub.evaluate_modules import install_modules
    installed = install_modules(args.metrics_dir, args.names or None)
    for name, module in installed.items():
        print(f"installed {name} -> {module}")
    return 0


def _cmd_space_push(args: argparse.Namespace) -> int:
    from .hub.spaces import push_space, stage_space
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
    parser = argparse.ArgumentParser(prog="vlmjudge", description="Multimodal-LLM judges for text-to-image outputs.")
    parser.add_argument("--version", action="version", version=f"vlmjudge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="versions, backends, GPUs and registered methods")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=_cmd_info)

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

    from .serve import configure_serve
    configure_serve(sub.add_parser("serve", help="an OpenAI-compatible server over a judge (vLLM-style API)"))

    for name, hook in sorted(command_hooks().items()):
        method_parser = sub.add_parser(name, help=f"{name} commands")
        method_parser.set_defaults(judge_method=name)  # whose default model judge_from_args loads without --model
        try:
            hook.load()(method_parser)
        except ImportError as exc:
            method_parser.set_defaults(func=lambda _a, _e=exc, _n=name: _broken(_n, _e))
    return parser


def _default_model(args: argparse.Namespace) -> str | None:
    """The default model of the method whose sub-command runs (None outside one, or without one)."""
    name = getattr(args, "judge_method", None)
    if name is None:
        return None
    from .registry import get_method
    return get_method(name).default_model


def _broken(name: str, exc: Exception) -> int:
    print(f"vlmjudge {name}: unavailable ({exc})", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    from .intake import run_command
    args = build_parser().parse_args(argv)
    return run_command(lambda: args.func(args), "vlmjudge")


if __name__ == "__main__":
    sys.exit(main())
