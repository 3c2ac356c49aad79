"""How a rerun of a judging command knows what an earlier run finished.

A rerun with the same response cache asks the judge only what it has not answered yet; these
helpers count the items an earlier run's output already holds (cheaply: they read that output,
never the images or the model), check that the earlier run asked the same questions, and print
the "resuming: N of M done" line.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import IO, Any, Callable, Collection, Iterable


def say_resuming(done: int, total: int, stream: IO[str] | None = None) -> None:
    """Print "resuming: N of M done" when a rerun finds N of its M items already complete."""
    if done > 0:
        print(f"resuming: {done} of {total} done", file=stream or sys.stderr)


def cache_has_answers(cache: str | os.PathLike | None) -> bool:
    """Whether a response cache file exists and is not empty: without one nothing resumes."""
    return cache is not None and Path(cache).is_file() and Path(cache).stat().st_size > 0


def done_in_jsonl(path: str | os.PathLike, wanted: Collection[str], id_field: str,
                  is_done: Callable[[dict[str, Any]], bool]) -> int:
    """How many of the `wanted` ids an earlier run's JSON-lines output holds as complete records.

    Cheap: it reads the earlier output, never the images or the model. Lines that are not
    records (a manifest line, a blank line, a broken line) are ignored; a missing file is 0.
    """
    from ..outputs import iter_jsonl

    if not Path(path).is_file():
        return 0
    done = {str(record[id_field]) for _, record in iter_jsonl(path, skip_broken=True)
            if id_field in record and is_done(record)}
    return len(done & {str(w) for w in wanted})


def done_in_records(records: Iterable[dict[str, Any]], wanted: Collection[str], id_field: str,
                    is_done: Callable[[dict[str, Any]], bool]) -> int:
    """`done_in_jsonl` over records already read (e.g. the pairs of an earlier JSON result)."""
    done = {str(r[id_field]) for r in records if isinstance(r, dict) and id_field in r and is_done(r)}
    return len(done & {str(w) for w in wanted})


def earlier_manifest(path: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of an earlier run whose records are `path` (beside them, or an older file's
    first line), or None; an unreadable one is None too, as then nothing is resumed."""
    from ..outputs import JsonlError, read_manifest

    try:
        return read_manifest(path)
    except (JsonlError, OSError):
        return None


def same_answers(earlier: dict[str, Any] | None, current: dict[str, Any], keys: Iterable[str]) -> bool:
    """Whether an earlier run asked the same questions of the same judge (its cached answers fit
    this run): the manifests agree on every one of `keys`."""
    current = json.loads(json.dumps(current))  # as the earlier one was read back: tuples are lists
    return earlier is not None and all(earlier.get(k) == current.get(k) for k in keys)
