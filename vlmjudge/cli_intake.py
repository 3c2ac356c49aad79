"""The bad-input policy (`vlmjudge.intake`) as every judging command applies it.

A command lists its items (each one or more image paths), screens them with `screen` before any
model loads, scores what passed, adds the items that failed while running, and ends with
`finish`, which lists every failure as `path: reason`, writes `<out>.failures.jsonl` and picks
the exit status. `partial_output` writes a result file so that a failed or interrupted run
leaves nothing half-written behind (the response cache keeps the finished answers).
"""
from __future__ import annotations

import argparse
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator, Sequence

from .images import ImageInputError
from .intake import (
    EXIT_HELP,
    EXIT_NONE_SCORED,
    ON_ERROR_CHOICES,
    RUN,
    CommandError,
    Failure,
    check_images,
    exit_status,
    report_failures,
)

#: The exit-status paragraph of every judging command's --help.
EXIT_EPILOG = (EXIT_HELP + ". With --on-error raise, the first bad image stops the run before the model "
               "loads: one line with its index in the input and its path, status 2.")


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
    from .outputs import default_cache_path

    if getattr(args, "no_cache", False):
        args.cache = None
    elif getattr(args, "cache", None) is None:
        args.cache = str(default_cache_path(out))
    return args.cache


def deprecated_spelling(message: str, stream: IO[str] | None = None) -> None:
    """One 'deprecated:' line for an old way of giving an option that still works this release."""
    import sys

    print(f"deprecated: {message}; the old spelling is removed in the next release", file=stream or sys.stderr)


@dataclass
class Screened:
    """What the pre-load check found: the positions that passed, their resolution flags, the failures."""
    kept: list[int] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)


def screen(items: Sequence[Sequence[str | os.PathLike]], on_error: str = "skip") -> Screened:
    """Check every image of every item (one or more paths) before a model loads.

    An item fails on its first bad image. Images are checked one at a time and not kept, so a
    large folder costs one decode per image and no memory. With `on_error="raise"` the first
    bad image is a `CommandError` naming the item's index in the input and the path.
    """
    result = Screened()
    for index, paths in enumerate(items):
        notes, failed = [], None
        for path in paths:
            try:
                good, bad = check_images([(str(path), path)], on_error)
            except ImageInputError as error:
                raise CommandError(f"item {index}: {error.reason}") from None
            if bad:
                failed = Failure(index, bad[0].item, bad[0].reason)
                break
            if good[0].note:
                notes.append(good[0].note if len(paths) == 1 else f"{Path(path).name}: {good[0].note}")
        if failed is not None:
            result.failures.append(failed)
            continue
        result.kept.append(index)
        if notes:
            result.notes[index] = "; ".join(notes)
    return result


def finish(n_items: int, n_results: int, failures: Sequence[Failure], out: str | os.PathLike | None,
           stream: IO[str] | None = None) -> int:
    """List the failures (and write them beside `out`), and return the exit status for the run."""
    report_failures(sorted(failures, key=lambda failure: failure.index), out, stream)
    return exit_status(n_items, n_results)


def nothing_readable(screened: Screened, out: str | os.PathLike | None, stream: IO[str] | None = None) -> int:
    """Every item was bad input: list them and stop, without loading a model (exit status 4)."""
    report_failures(screened.failures, out, stream)
    return EXIT_NONE_SCORED


def start_run(out: str | os.PathLike | None) -> None:
    """Reset the progress that Ctrl-C reports: nothing saved yet, results going to `out`."""
    RUN.saved = 0
    RUN.out = None if out is None else str(out)


@contextmanager
def partial_output(out: str | os.PathLike) -> Iterator[IO[str]]:
    """A handle on `<out>.partial`, moved onto `out` when the block ends; removed on any failure."""
    out = Path(out)
    partial = out.with_name(out.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            yield handle
    except BaseException:  # an interrupt too: a rerun resumes from the response cache, not this file
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out)
