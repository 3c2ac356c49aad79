"""The one record schema every method writes: `id`, `status`, `score` first, then its own fields.

A reader (compare, agreement, annotate, a report) can then find any method's item, outcome and
score under the same keys. A record that breaks the schema is a bug in the method that made it,
so `check_record` raises at write time instead of letting a reader meet it later.
docs/outputs.md tables each method's fields.
"""
from __future__ import annotations

from typing import Any, Mapping

#: The keys every record starts with, in this order.
RECORD_KEYS = ("id", "status", "score")
#: scored: the item has a score; not_applicable: the method judged it outside its scope (no score);
#: failed: no score could be read or computed (the record says why, e.g. in `error` or `errors`).
STATUSES = ("scored", "not_applicable", "failed")


class RecordSchemaError(ValueError):
    """A record that does not start with `id`, `status`, `score`, or holds another status."""


def check_record(record: Mapping[str, Any], where: str = "record") -> Mapping[str, Any]:
    """`record` itself when it follows the schema, else a `RecordSchemaError` naming `where`.

    Examples:
        >>> check_record({"id": "cats/a.png", "status": "scored", "score": 0.8, "checks": []})["id"]
        'cats/a.png'
        >>> check_record({"image_id": "a.png", "status": "ok", "score": 1.0}, "results.jsonl record 1")
        Traceback (most recent call last):
        ...
        vlmjudge.record_schema.RecordSchemaError: results.jsonl record 1: a record starts with id, status, score; this one with image_id, status, score
        >>> check_record({"id": "a.png", "status": "failed", "score": 0.5})
        Traceback (most recent call last):
        ...
        vlmjudge.record_schema.RecordSchemaError: record: status 'failed' with score 0.5; only a scored record has a score
    """
    first = tuple(record)[:len(RECORD_KEYS)]
    if first != RECORD_KEYS:
        raise RecordSchemaError(f"{where}: a record starts with {', '.join(RECORD_KEYS)}; this one with "
                                f"{', '.join(map(str, first)) or 'nothing'}")
    status, score = record["status"], record["score"]
    if status not in STATUSES:
        raise RecordSchemaError(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
    if not isinstance(record["id"], str) or not record["id"]:
        raise RecordSchemaError(f"{where}: id must be a non-empty string, got {record['id']!r}")
    if (score is None) == (status == "scored"):
        raise RecordSchemaError(f"{where}: status {status!r} with score {score!r}; only a scored record has a score"
                                if score is not None else f"{where}: a scored record needs a score")
    return record


def status_counts(records: list[Mapping[str, Any]]) -> dict[str, int]:
    """How many records hold each status, every status named (0 where none).

    Examples:
        >>> status_counts([{"status": "scored"}, {"status": "failed"}, {"status": "scored"}])
        {'scored': 2, 'not_applicable': 0, 'failed': 1}
    """
    counts = dict.fromkeys(STATUSES, 0)
    for record in records:
        counts[record["status"]] += 1
    return counts


class ScoredOrFailed:
    """The status of a record that is scored exactly when it has a score and failed otherwise (a
    method with no not-applicable outcome): one definition for every such record type.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Pair(ScoredOrFailed):
        ...     score: float | None
        >>> Pair(0.5).status, Pair(None).status, Pair(None).valid
        ('scored', 'failed', False)
    """

    score: float | None

    @property
    def valid(self) -> bool:
        """Whether the record has a score (the older name of `status == "scored"`)."""
        return self.score is not None

    @property
    def status(self) -> str:
        """The shared status: scored, or failed (the record says why)."""
        return "scored" if self.score is not None else "failed"
