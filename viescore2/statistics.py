"""VIEScore2's own statistics over saved records, for `vlmjudge compare` and `vlmjudge.stats`.

The score mean leaves unread scores out (as the run summary does). Micro F1 and IoU pool the
cell counts over images before dividing (the suite report's `cell_f1_micro`), so a resample
sums its counts again; SRCC pairs the score with a human score where the records carry both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from vlmjudge.stats.correlation import spearman
from vlmjudge.stats.statistic import ColumnMean, Statistic

#: Record keys of the ground-truth cell counts an evaluation writes (`suite_report` rows).
COUNT_KEYS = ("cell_tp", "cell_fp", "cell_fn")
#: Record keys that may hold a human score for the same image.
HUMAN_KEYS = ("human_score", "gt_score")


def score_row(record: Mapping) -> Any:
    """The overall score; None when not read, NaN when the judge gave no answer."""
    if record.get("read_status") in ("error", "failed"):
        return math.nan
    score = record.get("score", record.get("pred_score"))
    return None if score is None else [float(score)]


def count_row(record: Mapping) -> Any:
    """(tp, fp, fn) of the predicted against the true defect cells; None without ground truth."""
    if any(record.get(k) is None for k in COUNT_KEYS):
        return None
    return [float(record[k]) for k in COUNT_KEYS]


def human_of(record: Mapping) -> Any:
    """The record's human score, if it carries one."""
    return next((record[k] for k in HUMAN_KEYS if record.get(k) is not None), None)


def score_human_row(record: Mapping) -> Any:
    """(score, human score); None unless both are there."""
    score, human = score_row(record), human_of(record)
    if score is None or human is None:
        return None
    return score if not isinstance(score, list) else [score[0], float(human)]


def category_of(record: Mapping) -> Any:
    """The example's category or source, when the record names one."""
    return record.get("category", record.get("source"))


def _sums(x: np.ndarray, axis: int) -> tuple[Any, Any, Any]:
    """Summed tp, fp, fn over the items."""
    return tuple(np.asarray(np.take(x, k, axis=-1).sum(axis=axis), dtype=float) for k in range(3))


def _ratio(num: Any, den: Any) -> Any:
    """num / den, 0 where den is 0 (the suite report's rule for an undefined ratio)."""
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


@dataclass(frozen=True)
class MicroF1:
    """Micro F1 from summed counts: 1 when nothing was predicted or true anywhere. Pooled: a
    resample's value needs only its summed tp, fp, fn (`from_sums`, `vlmjudge.stats.blocks`)."""

    def __call__(self, x: np.ndarray, axis: int = 0) -> Any:
        return self.from_sums(np.stack(_sums(x, axis), axis=-1), None)

    def from_sums(self, sums: np.ndarray, count: Any) -> Any:
        tp, fp, fn = (np.asarray(sums[..., k], dtype=float) for k in range(3))
        precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
        f1 = _ratio(2 * precision * recall, precision + recall)
        return np.where(tp + fp + fn == 0, 1.0, f1)


@dataclass(frozen=True)
class PooledIoU:
    """IoU of the pooled cells, tp / (tp + fp + fn): 1 when nothing was predicted or true anywhere;
    pooled like `MicroF1`."""

    def __call__(self, x: np.ndarray, axis: int = 0) -> Any:
        return self.from_sums(np.stack(_sums(x, axis), axis=-1), None)

    def from_sums(self, sums: np.ndarray, count: Any) -> Any:
        tp, fp, fn = (np.asarray(sums[..., k], dtype=float) for k in range(3))
        return np.where(tp + fp + fn == 0, 1.0, _ratio(tp, tp + fp + fn))


def srcc(x: np.ndarray) -> float:
    """Spearman correlation of the score with the human score; NaN without spread."""
    if len(x) < 2:
        return math.nan
    value = spearman(x[:, 0], x[:, 1])
    return math.nan if value is None else float(value)


STATISTICS: dict[str, Statistic] = {
    "mean_score": Statistic("mean score", score_row, ColumnMean(0), split=category_of,
                            description="mean overall score (0-10) over images whose score was read"),
    "micro_f1": Statistic("micro F1 of defect cells", count_row, MicroF1(), split=category_of,
                          description="F1 from tp, fp, fn summed over images with ground truth"),
    "pooled_iou": Statistic("IoU of pooled defect cells", count_row, PooledIoU(),
                            description="tp / (tp + fp + fn) summed over images with ground truth"),
    "srcc": Statistic("SRCC with human scores", score_human_row, srcc,
                      description="Spearman correlation of the score with the human score"),
}
