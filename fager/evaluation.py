"""The Factual A/B test: does a metric score the factual (reference) image at least as high as the generated one?

Per prompt, a pair is a win when s(factual) > s(generated), a tie when equal, a loss
otherwise (the inequality flips for lower-is-better metrics). Tie modes: `full` counts a
tie as correct (the paper's rule: a generated image may be factual too), `zero` counts it
as wrong, `skip` leaves it out of the denominator.

Pairing follows the release's `compute_pairwise` by default: an inner join on the key, with
pairs that lack a score on either side dropped (`dropped` counts them). `strict=True`
instead requires the same keys and a finite score everywhere, and raises otherwise.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

TieMode = Literal["full", "zero", "skip"]
TIE_MODES: tuple[str, ...] = ("full", "zero", "skip")
Scores = Mapping[Any, float | None] | Iterable[tuple[Any, float | None]]


class ABReport(BaseModel):
    """Counts, accuracy and per-pair margins (positive: the factual image was preferred).

    Examples:
        >>> report = ab_test({"p1": 90, "p2": 70, "p3": 50, "p4": 80}, {"p1": 60, "p2": 70, "p3": 75, "p4": 40})
        >>> report.wins, report.ties, report.losses, report.margins["p4"]
        (2, 1, 1, 40.0)
        >>> report.describe()
        'tie=full: 3/4 = 0.7500 (4 pairs, 1 ties)'
        >>> report.margin_summary()["wins"]
        {'mean': 35.0, 'std': 5.0}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tie_mode: TieMode
    pairs: int
    correct: int  # the accuracy's numerator: wins, plus ties under tie="full"
    wrong: int
    ties: int
    accuracy: float | None  # correct / (correct + wrong); None when nothing was counted
    margins: dict[str, float]
    wins: int = 0      # strict wins of the factual image (the release's `correct`)
    losses: int = 0    # strict losses (the release's `wrong`)
    skipped: int = 0   # ties left out of the denominator (tie="skip")
    dropped: int = 0   # keys without a pair or with a missing score on either side

    def describe(self) -> str:
        """One line for people: the accuracy as a fraction and the tie count."""
        value = "n/a" if self.accuracy is None else f"{self.accuracy:.4f}"
        dropped = f", {self.dropped} dropped" if self.dropped else ""
        return (f"tie={self.tie_mode}: {self.correct}/{self.correct + self.wrong} = {value} "
                f"({self.pairs} pairs, {self.ties} ties{dropped})")

    def margin_summary(self) -> dict[str, dict[str, float | None]]:
        """Mean and population standard deviation of the margins over all pairs, wins and losses.

        None where a group is empty (the release reports NaN).
        """
        values = list(self.margins.values())
        groups = {"all": values, "wins": [m for m in values if m > 0], "losses": [m for m in values if m < 0]}
        return {name: {"mean": statistics.fmean(group) if group else None,
                       "std": statistics.pstdev(group) if group else None}
                for name, group in groups.items()}


def ab_test(factual: Scores, generated: Scores, tie: TieMode = "full", *, higher_is_better: bool = True,
            strict: bool = False) -> ABReport:
    """Pairwise accuracy over the keys scored on both sides.

    `factual` and `generated` map a key (a prompt id) to a score, as a mapping or as
    (key, score) pairs; a key may appear once per side. A missing score (None or NaN) or a
    key on one side only drops that pair (the release's inner join), unless `strict`, where
    either is a ValueError.

    Examples:
        Two wins, one tie and one loss; p5 has no factual score and is dropped. A tie counts as
        correct (the paper's rule), as wrong, or not at all:

        >>> factual = {"p1": 90, "p2": 70, "p3": 50, "p4": 80, "p5": None}
        >>> generated = {"p1": 60, "p2": 70, "p3": 75, "p4": 40, "p5": 30}
        >>> [round(ab_test(factual, generated, tie).accuracy, 4) for tie in TIE_MODES]
        [0.75, 0.5, 0.6667]
        >>> ab_test(factual, generated).dropped
        1
        >>> ab_test(factual, generated, strict=True)
        Traceback (most recent call last):
        ...
        ValueError: factual score for 'p5' is not a finite number: None
    """
    if tie not in TIE_MODES:
        raise ValueError(f"tie must be one of {', '.join(TIE_MODES)}; got {tie!r}")
    factual, generated = _as_scores(factual, "factual"), _as_scores(generated, "generated")
    if strict:
        only_factual = sorted(set(factual) - set(generated), key=str)
        only_generated = sorted(set(generated) - set(factual), key=str)
        if only_factual or only_generated:
            raise ValueError(f"unpaired keys: factual only {only_factual[:10]}, "
                             f"generated only {only_generated[:10]}")
    margins: dict[str, float] = {}
    dropped = len(set(factual) ^ set(generated))
    for key in factual:
        if key not in generated:
            continue
        a, b = _score(factual[key], "factual", key, strict), _score(generated[key], "generated", key, strict)
        if a is None or b is None:
            dropped += 1
            continue
        margins[str(key)] = (a - b) if higher_is_better else (b - a)
    wins = sum(m > 0 for m in margins.values())
    ties = sum(m == 0 for m in margins.values())
    losses = len(margins) - wins - ties
    correct = wins + ties if tie == "full" else wins
    wrong = losses + ties if tie == "zero" else losses
    counted = correct + wrong
    return ABReport(tie_mode=tie, pairs=len(margins), correct=correct, wrong=wrong, ties=ties,
                    accuracy=correct / counted if counted else None, margins=margins, wins=wins,
                    losses=losses, skipped=ties if tie == "skip" else 0, dropped=dropped)


def _as_scores(scores: Scores, side: str) -> dict[Any, Any]:
    """Key -> score from a mapping or (key, score) pairs; a repeated key is an error."""
    if isinstance(scores, Mapping):
        return dict(scores)
    out: dict[Any, Any] = {}
    for entry in scores:
        key, value = entry
        if key in out:
            raise ValueError(f"{side} scores repeat the key {key!r}")
        out[key] = value
    return out


def _score(value: object, side: str, key: Any, strict: bool) -> float | None:
    """The score as a float; None for a missing one (None or NaN) unless `strict`."""
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    if missing and not strict:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{side} score for {key!r} is not a finite number: {value!r}")
    return float(value)
