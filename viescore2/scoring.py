"""The pure math of VIEScore2's numbers: the overall score, and the terms of the GRPO reward.

No parsing and no judge here: the functions take scores and grids already read (see
`viescore2.parsing`) and return floats. The overall score is the native ``score`` or the
geometric mean sqrt(PQ * SC); the localization reward is a coverage-weighted F-beta where a
ground-truth cell marked ``!`` weighs ``MARK_WEIGHT``; the score reward is 1 - |error| / 10
over the supervised scores. `viescore2.rewards` assembles these into TRL reward callables.
"""
from __future__ import annotations

import math
from typing import Mapping, Protocol


class GridCells(Protocol):
    """What the reward math reads of a grid (`viescore2.grid.Grid` has it); grid.py imports this
    module for the overall score, so the type is described here rather than imported.

    Examples:
        >>> from viescore2.grid import Grid
        >>> same = Grid({(1, 1)}, marks={(1, 1)}, n=2)
        >>> weighted_counts(same, same), fbeta_reward(same, same)
        ((2.0, 0.0, 0.0), 1.0)
    """

    n: int
    cells: frozenset[tuple[int, int]]
    marks: frozenset[tuple[int, int]]

    @property
    def is_empty(self) -> bool:
        """True when no cell is marked defective."""


#: The weight of each reward term in the total (`viescore2.rewards`): the grid's Dice, the score and the format.
REWARD_WEIGHTS: Mapping[str, float] = {"dice": 1.0, "score": 0.3, "format": 0.1}
MARK_WEIGHT = 2.0


def overall_score(scores: Mapping[str, float | None]) -> float | None:
    """Overall score: ``score`` when given, else sqrt(pq * sc) when both are given.

    Examples:
        >>> overall_score({"score": 7}), overall_score({"pq": 9, "sc": 4}), overall_score({"pq": 9})
        (7.0, 6.0, None)
    """
    if scores.get("score") is not None:
        return float(scores["score"])
    if scores.get("pq") is not None and scores.get("sc") is not None:
        return math.sqrt(float(scores["pq"]) * float(scores["sc"]))
    return None


def geometric_overall(pq: float, sc: float) -> float:
    """Overall score from perceptual quality and semantic consistency: sqrt(PQ * SC).

    Examples:
        PQ 9 and SC 4 give sqrt(36) = 6:

        >>> geometric_overall(9, 4)
        6.0
    """
    if pq < 0 or sc < 0:
        raise ValueError(f"scores must be non-negative, got pq={pq}, sc={sc}")
    return math.sqrt(pq * sc)


def weighted_counts(pred: GridCells, target: GridCells, mark_weight: float = MARK_WEIGHT) -> tuple[float, float, float]:
    """(TP_w, FP, FN_w): marked ground-truth cells weigh ``mark_weight`` (2), others 1; FP is unweighted.

    Examples:
        A marked ground-truth cell weighs 2 in TP and FN; a false positive weighs 1:

        >>> from viescore2.grid import Grid
        >>> target = Grid({(1, 1), (1, 2), (2, 2)}, marks={(1, 1)}, n=4)
        >>> pred = Grid({(1, 1), (3, 3)}, n=4)
        >>> weighted_counts(pred, target)
        (2.0, 1.0, 2.0)
    """
    if pred.n != target.n:
        raise ValueError(f"predicted grid is {pred.n}x{pred.n}, target grid is {target.n}x{target.n}")

    def w(cell) -> float:
        return mark_weight if cell in target.marks else 1.0

    tp = sum(w(c) for c in target.cells & pred.cells)
    fn = sum(w(c) for c in target.cells - pred.cells)
    fp = float(len(pred.cells - target.cells))
    return float(tp), fp, float(fn)


def fbeta_reward(pred: GridCells | None, target: GridCells, beta: float = 1.0, mark_weight: float = MARK_WEIGHT) -> float:
    """Coverage-weighted F-beta: 1 when both grids are empty, 0 when unparseable (None) or TP = 0.

    Examples:
        With TP_w = 2, FP = 1, FN_w = 2: P = 2/3, R = 1/2, and F1 = 2PR / (P + R) = 4/7:

        >>> from viescore2.grid import Grid
        >>> target = Grid({(1, 1), (1, 2), (2, 2)}, marks={(1, 1)}, n=4)
        >>> pred = Grid({(1, 1), (3, 3)}, n=4)
        >>> round(fbeta_reward(pred, target), 4), round(fbeta_reward(pred, target, beta=2.0), 4)
        (0.5714, 0.5263)
        >>> fbeta_reward(Grid(n=4), Grid(n=4)), fbeta_reward(None, target)
        (1.0, 0.0)
    """
    if beta <= 0:
        raise ValueError(f"beta must be positive, got {beta}")
    if pred is None:
        return 0.0
    if pred.is_empty and target.is_empty:
        return 1.0
    tp, fp, fn = weighted_counts(pred, target, mark_weight)
    if tp == 0:
        return 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall)


def dice_reward(pred: GridCells | None, target: GridCells, mark_weight: float = MARK_WEIGHT) -> float:
    """Coverage-weighted Dice, 2 TP_w / (2 TP_w + FP + FN_w): F-beta at beta = 1.

    Examples:
        2 TP_w / (2 TP_w + FP + FN_w) = 4 / (4 + 1 + 2):

        >>> from viescore2.grid import Grid
        >>> target = Grid({(1, 1), (1, 2), (2, 2)}, marks={(1, 1)}, n=4)
        >>> round(dice_reward(Grid({(1, 1), (3, 3)}, n=4), target), 4)
        0.5714
    """
    return fbeta_reward(pred, target, beta=1.0, mark_weight=mark_weight)


def supervised_keys(scores: Mapping[str, float | None]) -> tuple[str, ...]:
    """The scores a target supervises: PQ and SC when both are given, else the overall score, else none.

    A lone PQ or SC is no score supervision (the paper defines the reward for an overall score
    or for both axes; the release rewards only those two cases).

    Examples:
        >>> supervised_keys({"pq": 7, "sc": 5, "score": 6}), supervised_keys({"pq": 7}), supervised_keys({})
        (('pq', 'sc'), (), ())
    """
    if scores.get("pq") is not None and scores.get("sc") is not None:
        return ("pq", "sc")
    return ("score",) if scores.get("score") is not None else ()


def score_reward(pred: Mapping[str, float], target: Mapping[str, float]) -> float:
    """Mean of 1 - |s_hat - s| / 10 over the supervised scores; a missing prediction earns 0.

    Examples:
        Off by 2 on PQ and exact on SC: the mean of 1 - 2/10 and 1:

        >>> score_reward({"pq": 5, "sc": 6}, {"pq": 7, "sc": 6})
        0.9
        >>> score_reward({"score": None}, {"score": 8})
        0.0
    """
    keys = supervised_keys(target)
    if not keys:
        raise ValueError("score_reward needs a supervised score: 'score', or both 'pq' and 'sc'")
    return sum(1.0 - abs(pred[k] - target[k]) / 10.0 if pred.get(k) is not None else 0.0
               for k in keys) / len(keys)
