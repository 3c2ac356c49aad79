"""TIFA's own statistics over saved records, for `vlmjudge compare` and the benchmark.

`tifa_average` is the mean of the images' scores, as TIFA averages its captions' scores; each
element type's accuracy pools that type's questions over the scored images (correct over asked),
as TIFA's `accuracy_by_type` pools them, so it is resampled as one ratio of sums.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from vlmjudge.stats.statistic import ColumnMean, ColumnShare, Statistic

from .questions import ELEMENT_TYPES


def score_row(record: Mapping) -> Any:
    """An image's TIFA score; NaN for a failed image (counted as missing by the paired statistics)."""
    return math.nan if record.get("score") is None else [float(record["score"])]


@dataclass(frozen=True)
class TypeMarks:
    """[correct, wrong] among a scored image's questions of one element type; None when it has none."""
    element_type: str

    def __call__(self, record: Mapping) -> Any:
        if record.get("score") is None:
            return math.nan
        marks = [q.get("correct") for q in record.get("questions") or [] if q.get("element_type") == self.element_type]
        if not marks:
            return None
        return [sum(m is True for m in marks), sum(m is False for m in marks)]


def slug(element_type: str) -> str:
    """A statistic name's part for an element type ("animal/human" -> "animal_human")."""
    return element_type.replace("/", "_")


STATISTICS: dict[str, Statistic] = {
    "tifa_average": Statistic("TIFA average", score_row, ColumnMean(0), id_key="id",
                              description="mean share of questions answered as expected, over scored images"),
    **{f"accuracy_{slug(t)}": Statistic(f"accuracy on {t} questions", TypeMarks(t), ColumnShare(0), id_key="id",
                                        group="element type",
                                        description=f"{t} questions answered as expected, pooled over images")
       for t in ELEMENT_TYPES},
}

__all__ = ["STATISTICS", "TypeMarks", "score_row", "slug"]
