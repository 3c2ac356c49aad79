"""The flags every judging command shares, and the judge and cache they stand for.

`add_judge_flags` gives a command --model, --backend, --cache, --out and the rest;
`judge_from_args` loads the judge those flags describe, as every face loads one; `cache_beside`
is the one rule for where a command keeps its answer cache by default.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .errors import CommandError
from .intake import ON_ERROR_CHOICES, looks_like_path
from .preflight import TINY_JUDGE_HINT, check_device, check_model


class _Given(argparse.Action):
    """Store the value and note that it was given (`batch_size_given`), where the default must
    not bind a backend that picks its own."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def add_judge_flags(parser: argparse.ArgumentParser, model_flags: tuple[str, ...] = ("--model",)) -> None:
    """The flags every judging command shares; each help says what happens without the flag.
    `model_flags` names the judge's flag (`vlmjudge benchmark` adds --judge, its models being others)."""
    g = parser.add_argument_group("judge")
    g.add_argument(*model_flags, dest="model",
                   help="the judge: a Hub id, a local checkpoint folder, a server's model name, or a "
                        "replay JSONL of recorded answers (default: the method's default model)")
    g.add_argument("--revision", default=None, help="Hub revision: branch, tag or commit (default: the main branch)")
    g.add_argument("--backend", default="transformers",
                   help="how the judge runs: transformers (in this process), openai (a server, see --base-url), "
                        "replay (recorded answers) or module:Class (default: transformers)")
    g.add_argument("--base-url", default=None,
                   help="an OpenAI-compatible server, e.g. http://HOST:8000/v1 (vlmjudge serve, vLLM, SGLang); "
                        "implies --backend openai (default: none, the model runs in this process)")
    g.add_argument("--server", choices=("vllm", "sglang", "openai"), default="vllm",
                   help="the server family, whose request extensions differ; openai for a hosted API "
                        "(default: vllm)")
    g.add_argument("--request-timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="openai backend: the most one attempt of a request takes, connect to last byte "
                        "(default: 60)")
    g.add_argument("--max-response-bytes", type=_positive_bytes, default=None, metavar="BYTES",
                   help="openai backend: refuse a reply larger than this (default: what a legitimate reply to "
                        "each request can take, from its max_tokens and logprobs)")
    g.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    g.add_argument("--dtype", default=None, help="bfloat16, float16, float32 (default: the backend's)")
    g.add_argument("--batch-size", type=int, default=8, action=_Given,
                   help="requests per model call (default: 8; a server's judge, unless given, sends a "
                        "stage's requests together, up to its concurrency)")
    g.add_argument("--cache", default=None,
                   help="SQLite file of the judge's answers; a rerun with the same file resumes from it "
                        "(default: no cache, unless the command says where it keeps one)")
    g.add_argument("--key-fields", default=None,
                   help="replay backend: comma-separated meta fields that key the answers, e.g. "
                        "item_id,question_id (default: the request's content)")
    g.add_argument("--out", default=None, help="where results go (default: the command's own, see its description)")


def _positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (argparse's type for --request-timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds above 0")
    return value


def _positive_bytes(text: str) -> int:
    """A whole number of bytes, at least 1 (argparse's type for --max-response-bytes)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes >= 1")
    return int(text)


def add_on_error_flag(parser: argparse.ArgumentParser) -> None:
    """`--on-error skip|raise`, the same words on every judging command."""
    parser.add_argument("--on-error", choices=ON_ERROR_CHOICES, default="skip",
                        help="skip (default): bad images are listed as 'path: reason', written to "
                             "<out>.failures.jsonl and the rest are scored; raise: the first bad image "
                             "stops the run before the model loads")


def add_no_cache_flag(parser: argparse.ArgumentParser) -> None:
    """`--no-cache`: the judging commands cache answers beside --out unless told not to."""
    parser.add_argument("--no-cache", action="store_true",
                        help="do not cache the judge's answers (a rerun asks everything again)")


def cache_beside(args: argparse.Namespace, out: str | os.PathLike) -> str | None:
    """Set `args.cache` by the one default-cache rule and return it: --cache as given, none with
    --no-cache, else `<stem>.cache.sqlite` beside the records file `out`."""
    from ..outputs import default_cache_path

    if getattr(args, "no_cache", False):
        args.cache = None
    elif getattr(args, "cache", None) is None:
        args.cache = str(default_cache_path(out))
    return args.cache


def _first_line(exc: BaseException) -> str:
    """The first line of an error's text (or its type's name): a load failure is one line."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def check_judge(args: argparse.Namespace, default_model: str | None = None) -> str:
    """The model the judge flags name, checked before anything loads (`preflight`): an in-process
    judge's --device, and its --model as a folder, a cached Hub id or one the Hub knows; each
    problem is one line, status 2. A model checked once is not looked up again."""
    model = args.model or default_model or _default_model(args)
    if not model:
        raise CommandError("--model is required (this command has no default model)")
    if args.backend != "transformers" or getattr(args, "base_url", None):
        return model  # a server, recorded answers or a custom backend: nothing loads here
    check_device(getattr(args, "device", None))
    if looks_like_path(model):
        if not os.path.isdir(os.path.expanduser(model)):
            raise CommandError(f"--model {model}: no such checkpoint folder ({TINY_JUDGE_HINT})")
    elif not os.path.isdir(model) and getattr(args, "checked_model", None) != model:
        check_model(model, getattr(args, "revision", None), defaulted=not args.model)
    args.checked_model = model
    return model


def judge_recipe_from_args(args: argparse.Namespace, default_model: str | None = None) -> Any:
    """The `JudgeRecipe` the shared flags describe, checked (`check_judge`) but not loaded: what a
    command that loads its judge elsewhere (each Ray actor of a benchmark) hands on."""
    from ..faces.loading import judge_recipe
    model = check_judge(args, default_model)
    extra: dict[str, Any] = {}
    if getattr(args, "key_fields", None):
        extra["key_fields"] = tuple(args.key_fields.split(","))
    backend = args.backend
    if getattr(args, "base_url", None):
        if backend == "transformers":  # the default, and in-process: a server URL means the openai backend
            backend = "openai"
        elif backend != "openai":
            raise CommandError(f"--base-url is for the openai backend, not --backend {backend}")
        extra["base_url"] = args.base_url
        extra["server"] = getattr(args, "server", "vllm")
    if backend != "openai" or getattr(args, "batch_size_given", False):  # a server's judge sizes its chunks
        extra["batch_size"] = args.batch_size
    for flag, setting in (("request_timeout", "timeout_s"), ("max_response_bytes", "max_response_bytes")):
        if getattr(args, flag, None) is not None:
            if backend != "openai":
                raise CommandError(f"--{flag.replace('_', '-')} bounds requests to a server: give --base-url "
                                   f"(the openai backend), not --backend {backend}")
            extra[setting] = getattr(args, flag)
    return judge_recipe(model=os.path.expanduser(model) if looks_like_path(model) else model, backend=backend,
                        revision=getattr(args, "revision", None), device=getattr(args, "device", None),
                        dtype=getattr(args, "dtype", None), cache=args.cache, judge_kwargs=extra, where="--model")


def judge_from_args(args: argparse.Namespace, default_model: str | None = None) -> Any:
    """A judge from the shared flags, loaded as every face loads one (`vlmjudge.faces`): without
    --model, the method's default model (`default_model`, else that of the method whose
    sub-command runs); a --model that cannot load is one clear line, at once (`check_judge`)."""
    recipe = judge_recipe_from_args(args, default_model)
    model = check_judge(args, default_model)  # as given, for the error line (checked once already)
    if not getattr(args, "quiet", False):
        print(loading_line(model, recipe.backend, recipe.device, recipe.extra.get("base_url")), file=sys.stderr,
              flush=True)
    try:
        return recipe.load()
    except (OSError, ValueError, ImportError) as exc:  # Hub and file errors are OSErrors
        from ..cache import CacheFileError
        if isinstance(exc, CacheFileError):
            raise
        raise CommandError(f"cannot load --model {model}: {_first_line(exc)}") from None


def loading_line(model: Any, backend: str, device: str | None = None, base_url: str | None = None) -> str:
    """The line a command prints on standard error while its judge loads: a checkpoint takes
    seconds to minutes, and a silent terminal meanwhile looks stuck.

    Examples:
        >>> loading_line("tiny-judge/", "transformers", "cpu")
        'loading judge tiny-judge/ (transformers, cpu) ...'
        >>> loading_line("qwen", "openai", base_url="http://127.0.0.1:8000/v1")
        'loading judge qwen (openai, http://127.0.0.1:8000/v1) ...'
    """
    where = ", ".join(str(part) for part in (backend, device, base_url) if part)
    return f"loading judge {model} ({where}) ..."


def _default_model(args: argparse.Namespace) -> str | None:
    """The default model of the method whose sub-command runs (None outside one, or without one)."""
    name = getattr(args, "judge_method", None)
    if name is None:
        return None
    from ..registry import get_method
    return get_method(name).default_model
