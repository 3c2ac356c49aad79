"""Paired sign-flip permutation test: under "the two runs are exchangeable on each item" every
per-item difference is as likely negated, so flipping signs gives the null distribution.

Exact (all 2^n flips) for n <= 20, where random flips would only add noise; sampled above.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vlmjudge.stats.pairing import Reader, align
from vlmjudge.stats.resample import Statistic, accepts_axis

EXACT_MAX_N = 20
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class PermutationTest:
    """The observed statistic of the differences (b - a), its p-value, and how it was reached."""
    statistic: float
    pvalue: float
    n: int
    n_resamples: int
    exact: bool
    alternative: str


def _flip_stats(d: np.ndarray, signs: np.ndarray, statistic: Statistic, vec: bool) -> np.ndarray:
    """Statistic of each sign-flipped copy of the differences (one row of signs per copy)."""
    flipped = signs * d
    return statistic(flipped, axis=1) if vec else np.array([statistic(row) for row in flipped])


def _null(d: np.ndarray, statistic: Statistic, n_resamples: int, rng: np.random.Generator,
          vec: bool) -> tuple[np.ndarray, bool]:
    """Null draws: every sign pattern when n is small, else n_resamples random patterns."""
    n = len(d)
    exact = n <= EXACT_MAX_N
    total = 2 ** n if exact else n_resamples
    step = max(1, _CHUNK_CELLS // max(1, n))
    out = np.empty(total)
    bits = np.arange(n)
    for start in range(0, total, step):
        rows = min(step, total - start)
        if exact:
            pattern = (np.arange(start, start + rows)[:, None] >> bits) & 1
        else:
            pattern = rng.integers(0, 2, (rows, n))
        out[start:start + rows] = _flip_stats(d, 1 - 2 * pattern, statistic, vec)
    return out, exact


def paired_permutation_test(a: Any, b: Any, n_resamples: int = 10_000, alternative: str = "two-sided",
                            seed: int = 0, statistic: Statistic = np.mean, *, value: Reader = "score",
                            status_key: str = "status", vectorized: bool | None = None) -> PermutationTest:
    """P-value for "b and a are exchangeable per item", on the statistic of the differences b - a.

    Inputs pair as in paired_bootstrap (N/A and failed items are left out). "greater" tests
    whether b's statistic is larger. Sampled p-values count the observed pattern, (k + 1) / (R + 1),
    so they are never 0; a two-sided p-value is twice the smaller one-sided one, capped at 1.
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', not {alternative!r}")
    paired = align(a, b, value=value, status_key=status_key)
    d = np.asarray(paired.b - paired.a, dtype=float)
    if d.ndim != 1 or len(d) == 0:
        raise ValueError("needs at least one paired item with one value each")
    vec = accepts_axis(statistic) if vectorized is None else vectorized
    observed = float(statistic(d))
    null, exact = _null(d, statistic, n_resamples, np.random.default_rng(seed), vec)
    # Flips equal to the observed value in exact arithmetic may differ in the last bits.
    tol = 100 * np.finfo(float).eps * max(abs(observed), float(np.abs(d).max()))
    plus = 0 if exact else 1
    greater = (np.sum(null >= observed - tol) + plus) / (len(null) + plus)
    less = (np.sum(null <= observed + tol) + plus) / (len(null) + plus)
    p = {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))}[alternative]
    return PermutationTest(statistic=observed, pvalue=float(p), n=len(d), n_resamples=len(null),
                           exact=exact, alternative=alternative)
