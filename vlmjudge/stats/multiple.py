"""Adjusted p-values for many comparisons at once (every pair of models on a leaderboard).

Holm controls the family-wise error rate under any dependence; Benjamini-Hochberg controls the
false discovery rate (valid under independence or positive dependence) and rejects more.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def _checked(p: Sequence[float]) -> np.ndarray:
    """P-values as a float array, refusing anything outside [0, 1] (NaN included)."""
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1:
        raise ValueError("p-values must be one-dimensional")
    if not np.all((arr >= 0) & (arr <= 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return arr


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm step-down: the i-th smallest p times (m - i + 1), made non-decreasing, capped at 1."""
    arr = _checked(p)
    m = len(arr)
    order = np.argsort(arr, kind="stable")
    scaled = np.maximum.accumulate((m - np.arange(m)) * arr[order])
    out = np.empty(m)
    out[order] = np.minimum(scaled, 1.0)
    return out


def benjamini_hochberg(p: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg step-up: the i-th smallest p times m / i, made non-decreasing from the
    top down (a minimum over larger ranks), capped at 1."""
    arr = _checked(p)
    m = len(arr)
    order = np.argsort(arr, kind="stable")
    scaled = arr[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out
