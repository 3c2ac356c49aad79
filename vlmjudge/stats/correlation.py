"""Pearson's r and Spearman's rho, the one implementation the methods' evaluations share.

Both take two equally long sequences of numbers (the caller drops missing pairs first) and
return None where the coefficient is undefined: fewer than two pairs, or a side with no spread.
Spearman's rho is Pearson's r of the ranks, tied values sharing the mean of their positions.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: The fewest items (or models) a rank correlation is reported on: on 2 every correlation is +1 or -1
#: whatever the data, so "1 [1, 1]" would say nothing; with fewer the value is absent, with a reason.
MIN_CORRELATION_ITEMS = 3


def too_few(n: int, what: str = "items") -> str | None:
    """Why a correlation over `n` `what` is not given (None when they are enough).

    Examples:
        >>> too_few(2)
        'too few items: 2 (a rank correlation needs at least 3)'
        >>> too_few(3) is None
        True
    """
    if n >= MIN_CORRELATION_ITEMS:
        return None
    return f"too few {what}: {n} (a rank correlation needs at least {MIN_CORRELATION_ITEMS})"


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their positions (what Spearman's rho ranks by).

    Examples:
        >>> average_ranks([10, 20, 20, 5]).tolist()
        [2.0, 3.5, 3.5, 1.0]
    """
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    start = 0
    while start < len(x):
        stop = start
        while stop + 1 < len(x) and sorted_x[stop + 1] == sorted_x[start]:
            stop += 1
        ranks[order[start:stop + 1]] = (start + stop) / 2.0 + 1.0
        start = stop + 1
    return ranks


def _pairs(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as float arrays; sides of different lengths are a caller's error, not a pairing."""
    if len(x) != len(y):
        raise ValueError(f"correlation of {len(x)} values with {len(y)} values")
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)


def _product_moment(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson's r of two float vectors; None for fewer than two pairs or a side with no spread."""
    if len(x) < 2:
        return None
    x, y = x - x.mean(), y - y.mean()
    den = math.sqrt(float((x * x).sum() * (y * y).sum()))
    return float((x * y).sum() / den) if den > 0 else None


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's product-moment r: how well a straight line relates the two sides.

    Examples:
        >>> round(pearson([1, 2, 3], [2, 4, 6.5]), 4)
        0.9979
        >>> pearson([1, 2, 3], [5, 5, 5]) is None, pearson([1], [2]) is None
        (True, True)
    """
    return _product_moment(*_pairs(x, y))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the tie-averaged ranks, how well an order relates the sides.

    Examples:
        >>> spearman([1, 2, 3, 4], [1, 3, 2, 4])
        0.8
        >>> spearman([1, 2, 2, 3], [10, 20, 20, 90])
        1.0
        >>> spearman([4, 4, 4], [1, 2, 3]) is None
        True
    """
    a, b = _pairs(x, y)
    return _product_moment(average_ranks(a), average_ranks(b))
