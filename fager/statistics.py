"""FAGER's own statistics over saved Verdict lines and A/B pairs, for `vlmjudge compare`.

The overall and per-level means leave unscored images out (as `summarize_verdicts` does). The
A/B accuracy reads one row per prompt, the factual-minus-generated margin (`ab_records` makes
them from an `ABReport`), so every tie mode is recomputed on each resample of prompts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from vlmjudge.stats.statistic import ColumnMean, Statistic

from .evaluation import TIE_MODES, ABReport

LEVELS = ("level_1", "level_2", "level_3")


def overall_row(record: Mapping) -> Any:
    """The overall score; NaN when it is missing because answers failed, else None when missing."""
    score = record.get("score")
    if score is not None:
        return [float(score)]
    return math.nan if (record.get("counts") or {}).get("failed") else None


@dataclass(frozen=True)
class LevelRow:
    """One level's score of a verdict (None where that level scored no question)."""
    level: str

    def __call__(self, record: Mapping) -> Any:
        score = (record.get("level_scores") or {}).get(self.level)
        return None if score is None else [float(score)]


def margin_row(record: Mapping) -> Any:
    """A prompt's A/B margin (positive: the factual image scored higher); None when absent."""
    margin = record.get("margin")
    return None if margin is None else [float(margin)]


def ab_records(report: ABReport) -> list[dict[str, Any]]:
    """The pairs of an A/B report as records of the shared schema, what the A/B statistics read: the
    prompt as `id` and its `margin`; a pair is no image and has no FAGER score of its own, so its
    status is `not_applicable` (the overall and level means leave it out)."""
    return [{"id": str(key), "status": "not_applicable", "score": None, "margin": margin}
            for key, margin in report.margins.items()]


@dataclass(frozen=True)
class ABAccuracy:
    """Pairwise accuracy from margins under a tie mode: full counts ties right, zero wrong, skip drops
    them. Pooled: a resample's value needs only its summed wins and ties and its count of prompts
    (`terms`, `from_sums`, `vlmjudge.stats.blocks`)."""
    tie: str

    def __call__(self, x: np.ndarray, axis: int = 0) -> Any:
        terms = self.terms(x)
        return self.from_sums(terms.sum(axis=axis), np.asarray(terms.shape[axis], dtype=float))

    def terms(self, x: np.ndarray) -> np.ndarray:
        """Per prompt: (a win of the factual image, a tie)."""
        m = np.take(x, 0, axis=-1)
        return np.stack([m > 0, m == 0], axis=-1).astype(float)

    def from_sums(self, sums: np.ndarray, count: Any) -> Any:
        wins, ties = np.asarray(sums[..., 0], dtype=float), np.asarray(sums[..., 1], dtype=float)
        total = np.broadcast_to(np.asarray(count, dtype=float), wins.shape)
        correct = wins + ties if self.tie == "full" else wins
        counted = total - ties if self.tie == "skip" else total
        return np.divide(correct, counted, out=np.full_like(correct, np.nan), where=counted > 0)


STATISTICS: dict[str, Statistic] = {
    "overall": Statistic("mean overall score", overall_row, ColumnMean(0), id_key="id",
                         description="mean overall score (0-100) over scored images"),
    **{f"mean_{level}": Statistic(f"mean {level.replace('_', ' ')} score", LevelRow(level), ColumnMean(0),
                                  id_key="id", group="level") for level in LEVELS},
    **{f"ab_accuracy_{tie}": Statistic(f"A/B accuracy (ties {tie})", margin_row, ABAccuracy(tie), id_key="id",
                                       description="share of prompts where the factual image scored higher")
       for tie in TIE_MODES},
}
