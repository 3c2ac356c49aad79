"""The one closing summary every scoring command prints, so runs of any method read alike:

    scored 7, not applicable 1, failed 0 of 8 · mean 0.812 [0.70, 0.90] (n=7) · wrote out/r.jsonl, out/r.manifest.json

The counts come from the records' shared `status` (`vlmjudge.record_schema`), the mean and its 95%
interval from their `score`; a method may add its own lines after it.
"""
from __future__ import annotations

import os
import sys
from typing import IO, Any, Iterable, Mapping, Sequence

from ..record_schema import status_counts
from ..stats.interval import interval_text, mean_with_interval


def summary_line(records: Sequence[Mapping[str, Any]], written: Iterable[str | os.PathLike],
                 number: str = "{:.3f}", skipped: int = 0) -> str:
    """The summary of `records` (dicts in the shared layout), the inputs `skipped` as bad input
    (they have no record) and the files the command wrote.

    Examples:
        >>> rows = [{"status": "scored", "score": 0.5}, {"status": "scored", "score": 0.5},
        ...         {"status": "not_applicable", "score": None}]
        >>> summary_line(rows, ["out/r.jsonl", "out/r.manifest.json"])
        'scored 2, not applicable 1, failed 0 of 3 · mean 0.500 [0.500, 0.500] (n=2) · wrote out/r.jsonl, out/r.manifest.json'
        >>> summary_line([], [], skipped=2)
        'scored 0, not applicable 0, failed 0 of 0 (2 skipped as bad input) · mean n/a (n=0) · wrote nothing'
    """
    counts = status_counts(list(records))
    mean = interval_text(mean_with_interval(r["score"] for r in records), number.format)
    files = ", ".join(os.fspath(path) for path in written) or "nothing"
    left_out = f" ({skipped} skipped as bad input)" if skipped else ""
    return (f"scored {counts['scored']}, not applicable {counts['not_applicable']}, failed {counts['failed']} "
            f"of {len(records)}{left_out} · mean {mean} · wrote {files}")


def print_summary(records: Sequence[Mapping[str, Any]], written: Iterable[str | os.PathLike],
                  number: str = "{:.3f}", skipped: int = 0, file: IO[str] | None = None) -> None:
    """Print `summary_line` (standard output unless `file`)."""
    print(summary_line(records, written, number, skipped), file=file or sys.stdout)
