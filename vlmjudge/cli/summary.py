"""The one closing summary every scoring command prints, so runs of any method read alike:

    scored 7, not applicable 1, failed 0 of 8 · mean 0.8123 [0.7012, 0.9000] (n=7) · wrote out/r.jsonl, out/r.manifest.json

The counts come from the records' shared `status` (`vlmjudge.record_schema`), the mean and its 95%
interval from their `score`, printed as every score is (`vlmjudge.text.format_score`); a method
may add its own lines after it.
"""
from __future__ import annotations

import os
import sys
from typing import IO, Any, Iterable, Mapping, Sequence

from ..record_schema import status_counts
from ..stats.interval import interval_text, mean_with_interval
from ..text import format_score


def summary_line(records: Sequence[Mapping[str, Any]], written: Iterable[str | os.PathLike],
                 skipped: int = 0) -> str:
    """The summary of `records` (dicts in the shared layout), the inputs `skipped` as bad input
    (they have no record) and the files the command wrote.

    Examples:
        >>> rows = [{"status": "scored", "score": 0.5}, {"status": "scored", "score": 0.5},
        ...         {"status": "not_applicable", "score": None}]
        >>> summary_line(rows, ["out/r.jsonl", "out/r.manifest.json"])
        'scored 2, not applicable 1, failed 0 of 3 · mean 0.5000 [0.5000, 0.5000] (n=2) · wrote out/r.jsonl, out/r.manifest.json'
        >>> summary_line([], [], skipped=2)
        'scored 0, not applicable 0, failed 0 of 0 (2 skipped as bad input) · mean n/a (n=0) · wrote nothing'
    """
    counts = status_counts(list(records))
    mean = interval_text(mean_with_interval(r["score"] for r in records), format_score)
    files = ", ".join(os.fspath(path) for path in written) or "nothing"
    left_out = f" ({skipped} skipped as bad input)" if skipped else ""
    return (f"scored {counts['scored']}, not applicable {counts['not_applicable']}, failed {counts['failed']} "
            f"of {len(records)}{left_out} · mean {mean} · wrote {files}")


def print_summary(records: Sequence[Mapping[str, Any]], written: Iterable[str | os.PathLike],
                  skipped: int = 0, file: IO[str] | None = None) -> None:
    """Print `summary_line` (standard output unless `file`)."""
    print(summary_line(records, written, skipped), file=file or sys.stdout)
