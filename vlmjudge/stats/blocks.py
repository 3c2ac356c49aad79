"""Resamples in blocks for pooled statistics: one matrix product per block of resamples serves every
statistic, run and category that rests on the same items.

A pooled statistic is a function of its items' summed terms and their count (a mean, a share of
summed counts, micro F1 from summed tp/fp/fn, an A/B accuracy from summed wins and ties): its
compute has `from_sums(sums, count)` and, when the terms are not the rows themselves, `terms(rows)`.
A block of bootstrap draws becomes a (resamples, items) matrix of how often each item was drawn,
and its product with the stacked terms gives every resample's sums at once; a swap test's block
of coin flips is a 0/1 matrix the same way. Memory is a block (about 32 MB) plus the terms: linear
in the items whatever the number of resamples. The draws are the ones `resample.bootstrap_distribution`
and `swap.paired_swap_test` make for the same seed, so each resample holds the same items.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: Cells of one block's (resamples, items) count matrix: 4e6 float64 cells, 32 MB.
BLOCK_CELLS = 4_000_000


def block_rows(n_items: int) -> int:
    """Resamples per block, so one block's count matrix stays within `BLOCK_CELLS`."""
    return max(1, BLOCK_CELLS // max(1, n_items))


def is_pooled(compute: Any) -> bool:
    """Whether a statistic's compute reads only summed terms and a count (it has `from_sums`)."""
    return callable(getattr(compute, "from_sums", None))


def pooled_columns(compute: Any, rows: np.ndarray) -> np.ndarray:
    """The (n, f + 1) columns whose sums a pooled compute reads: its terms of each scored row (zero
    on an unscored row, one holding NaN) and, last, 1 for a scored row (the count)."""
    rows = np.asarray(rows, dtype=float).reshape(len(rows), -1)
    scored = ~np.isnan(rows).any(axis=1)
    filled = np.where(scored[:, None], rows, 0.0)
    terms = getattr(compute, "terms", None)
    values = np.asarray(filled if terms is None else terms(filled), dtype=float).reshape(len(rows), -1)
    return np.hstack([values * scored[:, None], scored[:, None].astype(float)])


def pooled_values(compute: Any, sums: np.ndarray) -> np.ndarray:
    """A pooled compute on each row of `sums` (the columns of `pooled_columns`, summed): NaN where
    no scored row was drawn, as the statistic on no item is undefined."""
    count = sums[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.asarray(compute.from_sums(sums[:, :-1], count), dtype=float)
    return np.where(count > 0, values, np.nan)


def draw_counts(draws: np.ndarray, n_items: int) -> np.ndarray:
    """(resamples, draws) item indices as (resamples, n_items) counts of each item per resample.

    Examples:
        >>> draw_counts(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist()
        [[2.0, 0.0, 1.0], [0.0, 1.0, 2.0]]
    """
    counts = np.empty((len(draws), n_items))
    for row, drawn in zip(counts, draws):  # one row at a time: its counts stay in cache while they are made
        row[:] = np.bincount(drawn, minlength=n_items)
    return counts


def resampled_sums(columns: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Column sums of `columns` (n items, f) on each of `n_resamples` bootstrap resamples of the items,
    (n_resamples, f); each resample draws n items with replacement, `rng.integers(0, n, n)`.

    Examples:
        >>> columns = np.array([[1.0, 1.0], [3.0, 1.0]])
        >>> sums = resampled_sums(columns, 4, np.random.default_rng(0))
        >>> draws = np.random.default_rng(0).integers(0, 2, (4, 2))
        >>> bool(np.allclose(sums, columns[draws].sum(axis=1)))
        True
    """
    n = len(columns)
    out = np.empty((n_resamples, columns.shape[1]))
    step = block_rows(n)
    for start in range(0, n_resamples, step):
        rows = min(step, n_resamples - start)
        out[start:start + rows] = draw_counts(rng.integers(0, n, (rows, n)), n) @ columns
    return out


def swapped_sums(a: np.ndarray, b: np.ndarray, n_resamples: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Column sums of the two sides after each of `n_resamples` random swaps of paired rows (a row
    of coin flips per resample, `rng.integers(0, 2, n)`: 1 swaps that item's a and b rows):
    ((n_resamples, f) for a, the same for b)."""
    n = len(a)
    moved_per_swap = a - b  # what a swap moves from a's sum to b's
    total_a, total_b = a.sum(axis=0), b.sum(axis=0)
    out_a, out_b = np.empty((n_resamples, a.shape[1])), np.empty((n_resamples, a.shape[1]))
    step = block_rows(n)
    for start in range(0, n_resamples, step):
        rows = min(step, n_resamples - start)
        moved = rng.integers(0, 2, (rows, n)).astype(float) @ moved_per_swap
        out_a[start:start + rows] = total_a - moved
        out_b[start:start + rows] = total_b + moved
    return out_a, out_b
