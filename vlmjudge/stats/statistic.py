"""A method's own statistic, declared so that `vlmjudge.stats` can recompute it on resampled items.

A method knows how to turn one record into a row of numbers (a score, counts, a score with its
human rating) and how to turn a stack of rows into its headline number (a mean that skips N/A,
micro F1 from summed counts, a rank correlation). The stats code only resamples rows, so ratios
and correlations get honest intervals instead of a mean of per-item values.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: Row reader: one record -> a number or a 1-D sequence; None for N/A; NaN (any entry) for a failure.
RowReader = Callable[[Mapping], Any]
#: Categories of one record (for a breakdown): a label, several labels, or None.
Splitter = Callable[[Mapping], Any]


@dataclass(frozen=True)
class Statistic:
    """A named statistic over a run's per-item rows.

    `rows(record)` gives one item's row. `compute(x, axis=0)` maps rows stacked as (n, k) to a float,
    the items on `axis` (a batch of resamples arrives as (resamples, n, k) with axis=1; a compute
    without `axis` is called once per resample). `id_key` names the record's item id (missing: the record's position). `higher_is_better`
    is None for a statistic with no better direction (a share of violation kinds). `group` puts a
    statistic in the breakdown instead of the headline list; `split` names the categories an item
    belongs to, so that the statistic is also reported within each category.
    """

    label: str
    rows: RowReader
    compute: Callable[..., float]
    id_key: str = "id"
    higher_is_better: bool | None = True
    group: str | None = None
    split: Splitter | None = None
    description: str = ""


def categories_of(statistic: Statistic, record: Mapping) -> tuple[str, ...]:
    """The category labels one record falls in under the statistic's `split` (none without one)."""
    if statistic.split is None:
        return ()
    found = statistic.split(record)
    if found is None:
        return ()
    if isinstance(found, str) or not isinstance(found, Sequence):
        return (str(found),)
    return tuple(str(c) for c in found)


def item_rows(records: Sequence[Mapping], statistic: Statistic, only: str | None = None) -> list[dict]:
    """Records as `{"id", "row"}` items for the pairing code: the row is None (N/A) outside category
    `only`; a record without the id key is named by its position (runner files of some methods)."""
    out = []
    for position, rec in enumerate(records):
        row = statistic.rows(rec)
        if only is not None and only not in categories_of(statistic, rec):
            row = None
        if row is not None:  # always a 1-D row, so computes index columns the same way
            row = np.atleast_1d(np.asarray(row, dtype=float)).tolist()
        out.append({"id": str(rec.get(statistic.id_key, position)), "row": row})
    return out


def stacked(records: Sequence[Mapping], statistic: Statistic) -> np.ndarray:
    """The scored rows of a run as an (n, k) float array (N/A and failed rows left out)."""
    rows = [statistic.rows(rec) for rec in records]
    kept = [np.atleast_1d(np.asarray(r, dtype=float)) for r in rows if r is not None]
    kept = [r for r in kept if not np.isnan(r).any()]
    if not kept:
        return np.empty((0, 1))
    return np.stack(kept)


def value_of(records: Sequence[Mapping], statistic: Statistic) -> float:
    """The statistic on all of a run's scored items: what the identity resample gives."""
    x = stacked(records, statistic)
    if len(x) == 0:
        return float("nan")
    return float(statistic.compute(x))


@dataclass(frozen=True)
class ColumnMean:
    """Mean of one column over the items (a picklable compute, as specs travel to worker processes)."""
    column: int = 0

    def __call__(self, x: np.ndarray, axis: int = 0) -> Any:
        return np.take(x, self.column, axis=-1).mean(axis=axis)


@dataclass(frozen=True)
class ColumnShare:
    """Summed column `column` over the summed row totals (0 when nothing was counted): the share of
    one kind among all counted things, pooled over the items."""
    column: int

    def __call__(self, x: np.ndarray, axis: int = 0) -> Any:
        num = np.asarray(np.take(x, self.column, axis=-1).sum(axis=axis), dtype=float)
        den = np.asarray(x.sum(axis=-1).sum(axis=axis), dtype=float)
        return np.divide(num, den, out=np.zeros_like(num), where=den > 0)
