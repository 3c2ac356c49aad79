"""`vlmjudge info`: what this installation can run, for a bug report or a first check.

Versions of the optional libraries, the backends whose libraries import, the GPUs, the
registered methods (each with the extra it needs and whether that extra is installed) and the judge
families of the transformers backend; nothing is imported that is only looked for.
"""
from __future__ import annotations

import argparse
import json
import platform
from typing import Any

from .. import __version__
from ..registry import MethodSpec, list_methods

OPTIONAL_LIBS = ("torch", "torchvision", "transformers", "accelerate", "evaluate", "datasets", "torchmetrics",
                 "xgrammar", "openai", "httpx", "ray", "gradio", "diffusers", "lightning")

#: What each backend needs installed, checked without importing it (importing is slow).
BACKEND_NEEDS = {"transformers": ("torch", "transformers"), "openai": ("openai", "httpx"), "replay": ()}


def _version_of(distribution: str) -> str:
    """An installed distribution's version, or "not installed"."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


def collect_info() -> dict[str, Any]:
    """Versions, importable backends, GPUs and registered methods."""
    from importlib.util import find_spec

    from ..backends import BACKENDS
    libs = {name: _version_of(name) for name in OPTIONAL_LIBS}
    gpus: list[str] = []
    if find_spec("torch") is not None:
        import torch
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    backends = {}
    for name, target in BACKENDS.items():
        missing = [lib for lib in (*BACKEND_NEEDS.get(name, ()), target.split(":")[0]) if find_spec(lib) is None]
        backends[name] = "ok" if not missing else f"unavailable: missing {', '.join(missing)}"
    methods = {name: (f"error: {spec}" if isinstance(spec, Exception) else method_row(spec))
               for name, spec in list_methods().items()}
    from ..backends.hf.families import FAMILIES
    families = {f.model_type: f.name for f in FAMILIES.values()}  # the transformers backend's judges
    return {"vlmjudge": __version__, "python": platform.python_version(), "libraries": libs,
            "backends": backends, "gpus": gpus, "methods": methods, "families": families}


def method_row(spec: MethodSpec) -> dict[str, Any]:
    """A method's line of `vlmjudge info`: its inputs, score range, the extra it needs (None: the
    core install) and whether that extra's modules are installed (`missing` names the absent ones)."""
    missing = spec.missing_requirements()
    row = {"inputs": list(spec.inputs), "score_range": list(spec.score_range), "extra": spec.extra,
           "installed": not missing}
    if missing:
        row["missing"] = missing
    return row


def method_text(row: dict[str, Any] | str) -> str:
    """A method's row as one line of text (an error line as it is).

    Examples:
        >>> method_text({"inputs": ["image", "prompt"], "score_range": [0.0, 1.0], "extra": None, "installed": True})
        'inputs image, prompt; score 0.0..1.0; extra: none (core); installed'
        >>> method_text({"inputs": ["image"], "score_range": [0.0, 1.0], "extra": "iqa", "installed": False,
        ...              "missing": ["pyiqa"]})
        'inputs image; score 0.0..1.0; extra: iqa; not installed (pip install vlmjudge[iqa]: missing pyiqa)'
    """
    if isinstance(row, str):
        return row
    extra = row["extra"] or "none (core)"
    install = f"pip install vlmjudge[{row['extra']}]: " if row["extra"] else ""
    state = "installed" if row["installed"] else f"not installed ({install}missing {', '.join(row['missing'])})"
    low, high = row["score_range"]
    return f"inputs {', '.join(row['inputs'])}; score {low}..{high}; extra: {extra}; {state}"


def _print_section(title: str, rows: dict, width: int = 13) -> None:
    """One `vlmjudge info` section: its title, then a name and its value per line."""
    print(f"{title}:")
    for name, value in rows.items():
        print(f"  {name:{width}s} {value}")


def run_info(args: argparse.Namespace) -> int:
    """Print what `collect_info` found, as sections or (--json) as one JSON object."""
    info = collect_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"vlmjudge {info['vlmjudge']} (Python {info['python']})")
    _print_section("libraries", info["libraries"])
    _print_section("backends", info["backends"])
    print(f"GPUs: {', '.join(info['gpus']) or 'none'}")
    _print_section("methods", {name: method_text(row) for name, row in info["methods"].items()})
    _print_section("judge families (transformers backend)", info["families"], width=15)
    return 0
