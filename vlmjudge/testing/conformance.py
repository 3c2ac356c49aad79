"""The conformance suite every method's spec must pass, so the shared faces can rely on it.

`check_method(spec, judge, batch)` runs the spec through what the CLI, the demo app,
the integrations and distributed runs do with it, and raises `ConformanceError` with
the first broken promise. It returns the records it scored, for further assertions.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

from ..registry import MethodSpec, Scorer, ScoreRecord


class ConformanceError(AssertionError):
    """A method spec breaks a promise the shared faces rely on."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConformanceError(message)


def check_spec_fields(spec: MethodSpec) -> None:
    """Name, inputs, score range and callables are well-formed."""
    _require(isinstance(spec, MethodSpec), f"not a MethodSpec: {type(spec).__name__}")
    _require(bool(spec.name) and spec.name.isidentifier(), f"bad method name {spec.name!r}")
    _require(len(spec.inputs) > 0 and all(isinstance(c, str) for c in spec.inputs), "inputs must name columns")
    _require(not set(spec.inputs) & set(spec.optional_inputs), "a column is both required and optional")
    lo, hi = spec.score_range
    _require(math.isfinite(lo) and math.isfinite(hi) and lo < hi, f"bad score range {spec.score_range}")
    for end in (lo, hi):
        value = spec.normalize(end)
        _require(0.0 <= value <= 1.0, f"normalize({end}) = {value} is outside [0, 1]")
    _require(spec.normalize(lo) <= spec.normalize(hi), "normalize must not reverse the score range")
    for name in ("build", "normalize", "render"):
        _require(callable(getattr(spec, name)), f"{name} is not callable")


def check_records(spec: MethodSpec, records: Sequence[Any], n: int) -> None:
    """One record per item, each with a consistent score, validity and JSON form."""
    _require(len(records) == n, f"score_batch returned {len(records)} records for {n} items")
    lo, hi = spec.score_range
    for i, record in enumerate(records):
        _require(isinstance(record, ScoreRecord), f"record {i} lacks score/valid/to_json")
        if record.score is None:
            _require(not record.valid, f"record {i} has no score but claims to be valid")
        else:
            _require(isinstance(record.score, (int, float)) and math.isfinite(record.score),
                     f"record {i} score {record.score!r} is not a finite number")
            _require(lo - 1e-9 <= record.score <= hi + 1e-9, f"record {i} score {record.score} outside {spec.score_range}")
            _require(0.0 <= spec.normalize(record.score) <= 1.0, f"record {i} normalizes outside [0, 1]")
        as_json = record.to_json()
        _require(isinstance(as_json, dict), f"record {i} to_json() is not a dict")
        round_trip = json.loads(json.dumps(as_json))
        _require(round_trip == as_json, f"record {i} JSON form does not survive json round trip")
        shown = spec.render(record)
        _require(isinstance(shown, dict) and isinstance(shown.get("score_text"), str)
                 and isinstance(shown.get("markdown"), str), f"render(record {i}) needs str score_text and markdown")


def check_bad_batches(spec: MethodSpec, scorer: Scorer, batch: Mapping[str, Sequence[Any]]) -> None:
    """An empty batch and a batch without a required column raise clear errors."""
    empty = {c: [] for c in batch}
    try:
        scorer.score_batch(empty)
    except ValueError:
        pass
    else:
        raise ConformanceError("an empty batch did not raise ValueError")
    column = spec.inputs[0]
    partial = {c: v for c, v in batch.items() if c != column}
    try:
        scorer.score_batch(partial)
    except ValueError as exc:
        _require(column in str(exc), f"the error for a missing column does not name {column!r}: {exc}")
    else:
        raise ConformanceError(f"a batch without {column!r} did not raise ValueError")


def check_method(spec: MethodSpec, judge: Any, batch: Mapping[str, Sequence[Any]],
                 config: Mapping[str, Any] | None = None) -> list[Any]:
    """Run the whole suite; returns the records scored from `batch`."""
    check_spec_fields(spec)
    n = spec.check_batch(batch)
    scorer = spec.build(judge, **dict(config or spec.config))
    _require(isinstance(scorer, Scorer), "build() must return an object with score_batch(batch)")
    records = scorer.score_batch(batch)
    check_records(spec, records, n)
    check_bad_batches(spec, scorer, batch)
    return records
