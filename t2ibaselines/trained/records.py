"""The record every trained scorer writes, its rendering and its one statistic.

One record type for all of them, so `vlmjudge compare` and `agreement` read a CLIPScore run and a
MUSIQ run the same way: `id`, `status`, `score` first (`vlmjudge.record_schema`), then which scorer
and checkpoint made it. A failed item keeps its reason in `error`; a model output outside the
scorer's declared range keeps the number in `raw_score` but is never passed off as a score.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from vlmjudge.record_schema import ScoredOrFailed, check_record
from vlmjudge.stats.statistic import ColumnMean, Statistic
from vlmjudge.text import format_score


@dataclass
class TrainedRecord(ScoredOrFailed):
    """One scored item: `score` is None exactly when the item failed, and `error` says why.

    Examples:
        >>> TrainedRecord(id="a.png", score=31.2, scorer="clipscore").to_json()["status"]
        'scored'
        >>> failed = TrainedRecord(id="b.png", score=None, scorer="clipscore", error="no prompt")
        >>> failed.valid, failed.to_json()["score"], failed.to_json()["error"]
        (False, None, 'no prompt')
    """

    id: str
    score: float | None
    scorer: str
    error: str | None = None
    raw_score: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    made_by: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record in the shared layout: id, status, score, then the scorer's own fields."""
        record = {"id": self.id, "status": self.status, "score": self.score, "valid": self.valid,
                  "scorer": self.scorer, **self.details, "error": self.error, "made_by": dict(self.made_by)}
        if self.raw_score is not None:
            record["raw_score"] = self.raw_score
        return dict(check_record(record, f"{self.scorer} record {self.id!r}"))


def score_row(record: Mapping) -> Any:
    """A saved record's score as a row; NaN for a failed item (counted, never averaged in)."""
    if record.get("status") == "failed" or record.get("score") is None:
        return math.nan
    return [float(record["score"])]


def mean_score_statistics(label: str, higher_is_better: bool) -> dict[str, Statistic]:
    """The one statistic of a trained scorer: its mean over scored items, in the stated direction.

    Examples:
        >>> from vlmjudge.stats.statistic import value_of
        >>> stats = mean_score_statistics("mean LPIPS", higher_is_better=False)
        >>> records = [{"id": "a", "status": "scored", "score": 0.2}, {"id": "b", "status": "scored", "score": 0.4},
        ...            {"id": "c", "status": "failed", "score": None}]
        >>> round(value_of(records, stats["mean_score"]), 6), stats["mean_score"].higher_is_better
        (0.3, False)
    """
    direction = "higher is better" if higher_is_better else "lower is better"
    return {"mean_score": Statistic(label, score_row, ColumnMean(0), id_key="id", higher_is_better=higher_is_better,
                                    description=f"{label} over scored items ({direction}; failed items left out)")}


def render_record(record: TrainedRecord) -> dict[str, Any]:
    """Score text and a short markdown table for apps and reports.

    Examples:
        >>> render_record(TrainedRecord(id="a", score=0.25, scorer="hpsv2"))["score_text"]
        '0.2500'
        >>> render_record(TrainedRecord(id="a", score=None, scorer="hpsv2", error="no prompt"))["markdown"]
        'Could not score: no prompt'
    """
    if not isinstance(record, TrainedRecord):
        raise TypeError(f"trained scorers render TrainedRecord objects, got {type(record).__name__}")
    if record.score is None:
        return {"score_text": "N/A", "markdown": f"Could not score: {record.error}"}
    rows = ["| field | value |", "|---|---|", f"| {record.scorer} | {format_score(record.score)} |"]
    rows += [f"| {key} | {value} |" for key, value in {**record.details, **record.made_by}.items()]
    return {"score_text": format_score(record.score), "markdown": "\n".join(rows)}
