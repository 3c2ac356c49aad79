"""The progress bar of every long command: one tqdm bar on standard error, counting the command's
unit (images, pairs, prompts); a loop inside a method package reports each unit through a callback.

It is off when standard error is no terminal (a log file or a pipe gets no bar lines) and with
--quiet, so scripted runs print only their summary.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any


def add_quiet_flag(parser: argparse.ArgumentParser) -> None:
    """--quiet: no progress bar (it is also off when standard error is not a terminal)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (there is none either when standard error is not a terminal)")


def progress_bar(total: int, desc: str, args: argparse.Namespace | None = None, unit: str = "item") -> Any:
    """A tqdm bar over `total` items on standard error; a disabled one (its update and close do
    nothing) with --quiet or when standard error is not a terminal."""
    from tqdm.auto import tqdm

    quiet = bool(getattr(args, "quiet", False))
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=quiet or not sys.stderr.isatty())


def quiet_judge(judge: Any) -> Any:
    """`judge` with its own per-call bar off, so the command's bar is the only one; returns it."""
    if hasattr(judge, "progress"):
        judge.progress = False
    return judge
