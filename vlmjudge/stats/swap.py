"""Paired permutation test for any statistic of per-item rows: swap the two runs' rows item by item.

Under "the two runs are exchangeable on each item", which run an item's row belongs to is a coin
flip; recomputing statistic(b) - statistic(a) after random swaps gives the null distribution. For
the mean this is the sign-flip test; for micro F1 or a correlation it is the test that still fits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlmjudge.stats.resample import Statistic, accepts_axis

_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class SwapTest:
    """Observed statistic(b) - statistic(a), its two-sided p-value, and the number of swaps drawn."""
    diff: float
    pvalue: float
    n: int
    n_resamples: int


def _null(a: np.ndarray, b: np.ndarray, statistic: Statistic, n_resamples: int,
          rng: np.random.Generator) -> np.ndarray:
    """statistic(b') - statistic(a') for each random swap pattern (chunked, vectorised when possible)."""
    n = len(a)
    vec = accepts_axis(statistic)
    width = int(np.prod(a.shape[1:])) if a.ndim > 1 else 1
    step = max(1, _CHUNK_CELLS // max(1, n * width))
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, step):
        rows = min(step, n_resamples - start)
        swap = rng.integers(0, 2, (rows, n)).astype(bool)
        mask = swap.reshape(rows, n, *([1] * (a.ndim - 1)))
        a_new, b_new = np.where(mask, b, a), np.where(mask, a, b)
        if vec:
            out[start:start + rows] = statistic(b_new, axis=1) - statistic(a_new, axis=1)
        else:
            out[start:start + rows] = [statistic(y) - statistic(x) for x, y in zip(a_new, b_new)]
    return out


def paired_swap_test(a: np.ndarray, b: np.ndarray, statistic: Statistic = np.mean, n_resamples: int = 2000,
                     seed: int = 0) -> SwapTest:
    """Two-sided p-value for statistic(b) - statistic(a) on rows paired by position.

    The p-value counts the observed pattern, (k + 1) / (R + 1), so it is never 0.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or len(a) == 0:
        raise ValueError(f"needs paired rows of one shape, got {a.shape} and {b.shape}")
    observed = float(statistic(b) - statistic(a))
    null = _null(a, b, statistic, n_resamples, np.random.default_rng(seed))
    return SwapTest(diff=observed, pvalue=swap_pvalue(observed, null), n=len(a), n_resamples=n_resamples)


def swap_pvalue(observed: float, null: np.ndarray) -> float:
    """Two-sided p-value of `observed` among the swapped differences `null`, (k + 1) / (R + 1); a
    swapped difference equal to the observed one up to rounding counts as reaching it."""
    tol = 100 * np.finfo(float).eps * max(1.0, abs(observed))
    extreme = np.sum(np.abs(null) >= abs(observed) - tol)
    return float((extreme + 1) / (len(null) + 1))
