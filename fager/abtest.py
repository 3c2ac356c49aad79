"""The Factual A/B test: does a metric score the factual (reference) image at least as high as the generated one?

Per prompt, a pair is a win when s(factual) > s(generated), a tie when equal, a loss
otherwise (the inequality flips for lower-is-better metrics). Tie modes: `full` counts a
tie as correct (the paper's rule: a generated image may be factual too), `zero` counts it
as wrong, `skip` leaves it out of the denominator.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

TieMode = Literal["full", "zero", "skip"]
TIE_MODES: tuple[str, ...] = ("full", "zero", "skip")


class ABReport(BaseModel):
    """Counts, accuracy and per-pair margins (positive: the factual image was preferred)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tie_mode: TieMode
    pairs: int
    correct: int
    wrong: int
    ties: int
    accuracy: float | None  # correct / (correct + wrong); None when nothing was counted
    margins: dict[str, float]

    def describe(self) -> str:
        """One line for people: the accuracy as a fraction and the tie count."""
        value = "n/a" if self.accuracy is None else f"{self.accuracy:.4f}"
        return (f"tie={self.tie_mode}: {self.correct}/{self.correct + self.wrong} = {value} "
                f"({self.pairs} pairs, {self.ties} ties)")


def ab_test(factual: Mapping[str, float], generated: Mapping[str, float], tie: TieMode = "full",
            *, higher_is_better: bool = True) -> ABReport:
    """Pairwise accuracy over prompts present on both sides; keys must match exactly."""
    if tie not in TIE_MODES:
        raise ValueError(f"tie must be one of {', '.join(TIE_MODES)}; got {tie!r}")
    only_factual = sorted(set(factual) - set(generated), key=str)
    only_generated = sorted(set(generated) - set(factual), key=str)
    if only_factual or only_generated:
        raise ValueError(f"unpaired keys: factual only {only_factual[:10]}, generated only {only_generated[:10]}")
    margins: dict[str, float] = {}
    for key in factual:
        a, b = _finite(factual[key], "factual", key), _finite(generated[key], "generated", key)
        margins[key] = (a - b) if higher_is_better else (b - a)
    wins = sum(m > 0 for m in margins.values())
    ties = sum(m == 0 for m in margins.values())
    losses = len(margins) - wins - ties
    correct = wins + ties if tie == "full" else wins
    wrong = losses + ties if tie == "zero" else losses
    counted = correct + wrong
    return ABReport(tie_mode=tie, pairs=len(margins), correct=correct, wrong=wrong, ties=ties,
                    accuracy=correct / counted if counted else None, margins=margins)


def _finite(value: object, side: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{side} score for {key!r} is not a finite number: {value!r}")
    return float(value)
