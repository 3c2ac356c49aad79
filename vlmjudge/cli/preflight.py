"""Checks a judging command runs before any model loads, each failing in one line a person can act on.

A mistyped --model otherwise costs minutes of Hub retries and ends in a generic connection error;
`--device gpu` fails only after the checkpoint has loaded; a folder where a file is expected ends
in `[Errno 21]`. Here each is a `CommandError` (exit status 2) naming what to give instead.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import CommandError

#: The device names an in-process judge takes.
DEVICE_NAMES = ("cpu", "cuda", "cuda:N", "mps", "xpu", "xpu:N")
_DEVICE = re.compile(r"(cpu|mps|(cuda|xpu)(:\d+)?)")

#: What a person runs to get a judge that works offline.
TINY_JUDGE_HINT = "`python -m vlmjudge.testing demo DIR` builds a tiny offline judge to try with --model DIR"


def check_model(model: str, revision: str | None = None, defaulted: bool = False) -> None:
    """An in-process --model that is no folder, not in the Hugging Face cache and not on the Hub
    is one line, decided from the local state and at most one short Hub lookup (`vlmjudge.offline`)."""
    from ..offline import unavailable_reason

    reason = unavailable_reason(model, revision)
    if reason is None:
        return
    given = f"the default model {model} (no --model given)" if defaulted else f"--model {model}"
    raise CommandError(f"{given} is {reason}; give a local checkpoint folder or a cached Hub id "
                       f"({TINY_JUDGE_HINT})")


def check_device(device: str | None) -> None:
    """An unknown device name lists the valid ones; a GPU device on a machine without one says so.

    Examples:
        >>> check_device("cpu"), check_device(None)
        (None, None)
        >>> try:
        ...     check_device("gpu")
        ... except CommandError as error:
        ...     print(error)
        --device gpu: not a device name; use one of cpu, cuda, cuda:N, mps, xpu, xpu:N
    """
    if device is None or device == "cpu":
        return
    if not _DEVICE.fullmatch(device):
        raise CommandError(f"--device {device}: not a device name; use one of {', '.join(DEVICE_NAMES)}")
    kind, _, number = device.partition(":")
    import torch

    backend = {"cuda": torch.cuda, "xpu": getattr(torch, "xpu", None), "mps": torch.backends.mps}[kind]
    if backend is None or not backend.is_available():
        raise CommandError(f"--device {device}: no {kind.upper()} device is available on this machine; "
                           "use --device cpu (or leave --device out to take a GPU when there is one)")
    count = backend.device_count() if hasattr(backend, "device_count") else 1
    if number and int(number) >= count:
        raise CommandError(f"--device {device}: this machine has {count} {kind.upper()} device(s), "
                           f"numbered from 0")


def require_file(path: str | os.PathLike, takes: str) -> Path:
    """`path` as a file the command reads; a folder or a missing path is one line saying what
    the command `takes` (its expected format)."""
    path = Path(path)
    if path.is_dir():
        found = sorted(p.name for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".csv", ".jsonl"))
        hint = f" (this folder holds {', '.join(found[:5])})" if found else ""
        raise CommandError(f"{path} is a folder; this command takes {takes}{hint}")
    if not path.is_file():
        raise CommandError(f"{path}: no such file; this command takes {takes}")
    return path


def require_out_folder(out: str | os.PathLike, writes: str) -> Path:
    """`out` as a folder the command may write `writes` into (made later, when the work is done);
    a file, a path under a file, or a folder this user may not write is one line, before the work."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise CommandError(f"--out {out} is a file; give a folder for {writes}")
        if not os.access(out, os.W_OK | os.X_OK):
            raise CommandError(f"--out {out} is a folder you may not write to")
        return out
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise CommandError(f"--out {out} lies under {parent}, which is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommandError(f"--out {out} cannot be made: {parent} is not writable")
    return out
