"""Paired permutation test for any statistic of per-item rows: swap the two runs' rows item by item.

Under "the two runs are exchangeable on each item", which run an item's row belongs to is a coin
flip; recomputing statistic(b) - statistic(a) after random swaps gives the null distribution. For
the mean this is the sign-flip test; for micro F1 or a correlation it is the test that still fits.
Under `EXACT_BELOW` paired items the test is exact: every one of the 2^n swap patterns, no sampling.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlmjudge.stats.resample import Statistic, accepts_axis

_CHUNK_CELLS = 2_000_000
#: Below this many paired items the p-value is exact (at most 2^9 = 512 patterns) and every interval
#: and p-value is marked unreliable: a bootstrap of so few items cannot show the spread of the data.
EXACT_BELOW = 10


@dataclass(frozen=True)
class SwapTest:
    """Observed statistic(b) - statistic(a), its two-sided p-value, and the number of swaps drawn."""
    diff: float
    pvalue: float
    n: int
    n_resamples: int
    exact: bool = False


def _null(a: np.ndarray, b: np.ndarray, statistic: Statistic, n_resamples: int,
          rng: np.random.Generator | None) -> np.ndarray:
    """statistic(b') - statistic(a') for each random swap pattern (chunked, vectorised when possible);
    with no `rng`, for every one of the 2^n patterns in turn (`n_resamples` = 2^n)."""
    n = len(a)
    vec = accepts_axis(statistic)
    width = int(np.prod(a.shape[1:])) if a.ndim > 1 else 1
    step = max(1, _CHUNK_CELLS // max(1, n * width))
    out = np.empty(n_resamples)
    bits = np.arange(n)
    for start in range(0, n_resamples, step):
        rows = min(step, n_resamples - start)
        if rng is None:
            swap = ((np.arange(start, start + rows)[:, None] >> bits) & 1).astype(bool)
        else:
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

    Under `EXACT_BELOW` items every swap pattern is counted: p = k / 2^n, the observed pattern among
    them (`exact`). Above, R random patterns, (k + 1) / (R + 1), so it is never 0. A tie (an item
    whose two rows are equal) swaps to itself: it stays in n and changes no p-value of a mean.

    Examples:
        Three items all favouring b: 2 of the 8 sign patterns reach |mean| = 1, p = 0.25:

        >>> paired_swap_test(np.zeros(3), np.ones(3)).pvalue
        0.25
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or len(a) == 0:
        raise ValueError(f"needs paired rows of one shape, got {a.shape} and {b.shape}")
    observed = float(statistic(b) - statistic(a))
    if len(a) < EXACT_BELOW:
        null = _null(a, b, statistic, 2 ** len(a), None)
        return SwapTest(diff=observed, pvalue=swap_pvalue(observed, null, exact=True), n=len(a),
                        n_resamples=len(null), exact=True)
    null = _null(a, b, statistic, n_resamples, np.random.default_rng(seed))
    return SwapTest(diff=observed, pvalue=swap_pvalue(observed, null), n=len(a), n_resamples=n_resamples)


def swap_pvalue(observed: float, null: np.ndarray, exact: bool = False) -> float:
    """Two-sided p-value of `observed` among the swapped differences `null`: (k + 1) / (R + 1) for
    random patterns, k / 2^n when `exact` (`null` holds every pattern, the observed one included); a
    swapped difference equal to the observed one up to rounding counts as reaching it."""
    tol = 100 * np.finfo(float).eps * max(1.0, abs(observed))
    extreme = np.sum(np.abs(null) >= abs(observed) - tol)
    plus = 0 if exact else 1
    return float((extreme + plus) / (len(null) + plus))
