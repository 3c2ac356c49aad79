"""The one record schema every method writes: `id`, `status`, `score` first, then its own fields.

A reader (compare, agreement, annotate, a report) can then find any method's item, outcome and
score under the same keys. A record that breaks the schema is a bug in the method that made it,
so `check_record` raises at write time instead of letting a reader meet it later; the commands that
read saved runs check every record again (`vlmjudge.run_records`), and the score against the
method's range. The score is a finite number (never a bool or text). docs/outputs.md tables each
method's fields.
"""
from __future__ import annotations

import math
import numbers
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
        vlmjudge.record_schema.RecordSchemaError: results.jsonl record 1: a record starts with id, status, score; this one has no 'id'
        >>> check_record({"id": "a.png", "status": "failed", "score": 0.5})
        Traceback (most recent call last):
        ...
        vlmjudge.record_schema.RecordSchemaError: record: status 'failed' with score 0.5; only a scored record has a score
    """
    first = tuple(record)[:len(RECORD_KEYS)]
    missing = [key for key in RECORD_KEYS if key not in record]
    if missing:
        raise RecordSchemaError(f"{where}: a record starts with {', '.join(RECORD_KEYS)}; this one has no "
                                f"{', '.join(map(repr, missing))}")
    if first != RECORD_KEYS:
        raise RecordSchemaError(f"{where}: a record starts with {', '.join(RECORD_KEYS)}; this one with "
                                f"{', '.join(map(str, first)) or 'nothing'}")
    status, score = record["status"], record["score"]
    if status not in STATUSES:
        raise RecordSchemaError(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
    if not isinstance(record["id"], str) or not record["id"]:
        raise RecordSchemaError(f"{where}: id must be a non-empty string, got {record['id']!r}")
    if (score is None) == (status == "scored"):
        raise RecordSchemaError(f"{where}: status {status!r} with score {_shown(score)}; only a scored record has a "
                                "score" if score is not None else f"{where}: a scored record needs a score")
    if score is not None:
        score_number(score, where)
    return record


def _shown(value: Any) -> str:
    """A value for a one-line message, cut short (a 400-digit number is not read by anyone)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


def score_number(score: Any, where: str = "record") -> float:
    """A score as a float: a real number (not a bool, not text), finite and within a float's range,
    else a `RecordSchemaError` naming `where`. A reader that took `true` as 1.0 or `Infinity` as a
    score would rank a run on it without a word.

    Examples:
        >>> score_number(3, "r.jsonl:2")
        3.0
        >>> score_number(True, "r.jsonl:2")
        Traceback (most recent call last):
        ...
        vlmjudge.record_schema.RecordSchemaError: r.jsonl:2: score True is not a number (bool)
        >>> score_number(10 ** 400, "r.jsonl:3")
        Traceback (most recent call last):
        ...
        vlmjudge.record_schema.RecordSchemaError: r.jsonl:3: score 100000000000000000000000... (401 characters) is too large for a number
    """
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise RecordSchemaError(f"{where}: score {_shown(score)} is not a number ({type(score).__name__})")
    try:
        value = float(score)
    except OverflowError:
        raise RecordSchemaError(f"{where}: score {_shown(score)} is too large for a number") from None
    if not math.isfinite(value):
        raise RecordSchemaError(f"{where}: score {_shown(score)} is not a finite number")
    return value


def check_score_range(record: Mapping[str, Any], score_range: tuple[float, float], where: str = "record",
                      method: str = "the method") -> None:
    """A `RecordSchemaError` naming `where` when a scored record's score lies outside the method's
    declared `score_range` (`MethodSpec.score_range`): such a score was not made by the method.

    Examples:
        >>> check_score_range({"id": "a", "status": "scored", "score": 1e308}, (0.0, 1.0), "r.jsonl:4", "terravis")
        Traceback (most recent call last):
        ...
        vlmjudge.record_schema.RecordSchemaError: r.jsonl:4: score 1e+308 lies outside terravis's score range 0 to 1
    """
    if record.get("score") is None:
        return
    low, high = score_range
    if not low <= score_number(record["score"], where) <= high:
        raise RecordSchemaError(f"{where}: score {_shown(record['score'])} lies outside {method}'s score range "
                                f"{low:g} to {high:g}")


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
