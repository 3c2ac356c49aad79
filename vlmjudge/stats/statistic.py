"""A method's own statistic, declared so that `vlmjudge.stats` can recompute it on resampled items.

A method knows how to turn one record into a row of numbers (a score, counts, a score with its
human rating) and how to turn a stack of rows into its headline number (a mean that skips N/A,
micro F1 from summed counts, a rank correlation). The stats code only resamples rows, so ratios
and correlations get honest intervals instead of a mean of per-item values. A compute that reads
only summed terms (`from_sums`, `vlmjudge.stats.blocks`) is recomputed on a whole block of
resamples at once; `RecordRows` reads each run's records once per row reader.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from vlmjudge.stats.blocks import draw_counts, is_pooled, pooled_columns, pooled_values
from vlmjudge.stats.pairing import FAILED, NA, OK, Items

#: Row reader: one record -> a number or a 1-D sequence; None for N/A; NaN (any entry) for a failure.
RowReader = Callable[[Mapping], Any]
#: Categories of one record (for a breakdown): a label, several labels, or None.
Splitter = Callable[[Mapping], Any]


@dataclass(frozen=True)
class Statistic:
    """A named statistic over a run's per-item rows.

    `rows(record)` gives one item's row. `compute(x, axis=0)` maps rows stacked as (n, k) to a float,
    the items on `axis` (a batch of resamples arrives as (resamples, n, k) with axis=1; a compute
    without `axis` is called once per resample); a compute with `from_sums` is pooled
    (`vlmjudge.stats.blocks`). `id_key` names the record's item id. `higher_is_better`
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

    def compute_many(self, rows: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """The statistic on each resample of `rows` ((n, k); a row holding NaN is unscored and left
        out): `draws` holds one resample's item indices per row, (resamples, n). NaN for a resample
        with no scored row. A pooled compute takes the whole block as one matrix product; any other
        is called once per resample.

        Examples:
            >>> stat = Statistic("mean", lambda r: r.get("score"), ColumnMean(0))
            >>> rows = np.array([[1.0], [np.nan], [4.0]])
            >>> stat.compute_many(rows, np.array([[0, 0, 2], [1, 1, 1]])).tolist()
            [2.0, nan]
        """
        rows = np.asarray(rows, dtype=float).reshape(len(rows), -1)
        if is_pooled(self.compute):
            return pooled_values(self.compute, draw_counts(draws, len(rows)) @ pooled_columns(self.compute, rows))
        out = np.full(len(draws), np.nan)
        for r, index in enumerate(draws):
            drawn = rows[index]
            kept = drawn[~np.isnan(drawn).any(axis=1)]
            if len(kept):
                out[r] = float(self.compute(kept))
        return out


class RowReadError(ValueError):
    """A record a statistic cannot read (a field of the wrong kind, rows of different lengths): one line."""


class RecordRows:
    """One run's records read once per row reader: every statistic sharing a reader (TerraVis's 22
    violation shares share two) and every category of a `split` come from one pass. Given records,
    it reads them when a statistic asks; `RecordRows.read` reads a stream of records for known
    statistics and keeps only their rows, so a large run is never held whole. `where` names each
    record in a refusal (file and line)."""

    def __init__(self, records: Sequence[Mapping] = (), where: Sequence[str] | None = None) -> None:
        self.records: Sequence[Mapping] | None = records
        self.where = list(where) if where is not None else [f"record {k}" for k in range(1, len(records) + 1)]
        self._rows: dict[Any, list] = {}  # (row reader, id key) -> each record's row
        self._ids: dict[Any, tuple[str, ...]] = {}  # id key -> each record's id
        self._categories: dict[Any, list[tuple[str, ...]]] = {}  # split -> each record's categories
        self._items: dict[Any, Items] = {}

    @classmethod
    def read(cls, stream: Iterable[tuple[Mapping, str]], statistics: Iterable[Statistic]) -> RecordRows:
        """(record, where) pairs read for `statistics` alone: their rows, ids and categories are
        kept and each record let go; asking for another statistic is a ValueError."""
        statistics = list(statistics)
        out = cls(())
        out.records = None
        for stat in statistics:
            out._rows.setdefault((stat.rows, stat.id_key), [])
            out._ids.setdefault(stat.id_key, ())
            if stat.split is not None:
                out._categories.setdefault(stat.split, [])
        readers = {key: next(s for s in statistics if (s.rows, s.id_key) == key) for key in out._rows}
        splitters = {split: next(s for s in statistics if s.split == split) for split in out._categories}
        ids: dict[Any, list[str]] = {key: [] for key in out._ids}
        for k, (record, where) in enumerate(stream):
            out.where.append(where)
            for key, stat in readers.items():
                out._rows[key].append(out._read(stat, record, k))
            for split, stat in splitters.items():
                out._categories[split].append(out._read(stat, record, k, categories=True))
            for id_key in ids:
                ids[id_key].append(str(record.get(id_key, k)))
        out._ids = {key: tuple(found) for key, found in ids.items()}
        return out

    def __len__(self) -> int:
        return len(self.where)

    def _needs_records(self, what: str) -> Sequence[Mapping]:
        """The records, when kept; a run read for other statistics cannot answer `what`."""
        if self.records is None:
            raise ValueError(f"this run was read for other statistics; it holds no {what}")
        return self.records

    def categories(self, statistic: Statistic) -> list[tuple[str, ...]]:
        """Each record's categories under the statistic's `split`."""
        if statistic.split not in self._categories:
            records = self._needs_records(f"categories of {statistic.label!r}")
            self._categories[statistic.split] = [self._read(statistic, rec, k, categories=True)
                                                 for k, rec in enumerate(records)]
        return self._categories[statistic.split]

    def items(self, statistic: Statistic, only: str | None = None) -> Items:
        """The run as `Items` under the statistic (N/A outside category `only`, when given); an
        item without the id key is named by its position, as in `item_rows`."""
        key = (statistic.rows, statistic.id_key, statistic.split if only is not None else None, only)
        if key not in self._items:
            if only is None:
                self._items[key] = self._stack(statistic)
            else:
                base = self.items(statistic)
                inside = np.array([only in found for found in self.categories(statistic)], dtype=bool)
                kinds = np.where(inside, base.kinds, NA).astype(np.int8)
                values = np.where((kinds == OK)[:, None], base.values, np.nan)
                self._items[key] = Items(base.ids, values, kinds, None)
        return self._items[key]

    def _read(self, statistic: Statistic, record: Mapping, k: int, categories: bool = False) -> Any:
        """Record k's row as the statistic gives it (None for N/A; made numbers in `_stack`, a whole
        run at once) or its categories; what the statistic cannot read is a one-line `RowReadError`."""
        try:
            return categories_of(statistic, record) if categories else statistic.rows(record)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as error:
            raise self._unreadable(statistic, k, error) from None

    def _unreadable(self, statistic: Statistic, k: int, error: Exception) -> RowReadError:
        """The one-line refusal of record k, which the statistic cannot read."""
        problem = " ".join(str(error).split()) or type(error).__name__
        return RowReadError(f"{self.where[k]}: the statistic {statistic.label!r} cannot read this record ({problem})")

    def _numbers(self, statistic: Statistic, rows: list) -> tuple[np.ndarray, np.ndarray]:
        """Each row as numbers: a kind per row (N/A, failed: a NaN in it, scored) and the scored rows
        stacked, all in one conversion when they have one length; else row by row, refusing a row
        that is no numbers, or of another length than the others, naming its record."""
        kinds = np.full(len(rows), OK, dtype=np.int8)
        present = []
        for k, row in enumerate(rows):
            if row is None:
                kinds[k] = NA
            elif isinstance(row, float) and row != row:  # a bare NaN: failed, whatever the width
                kinds[k] = FAILED
            else:
                present.append(k)
        try:
            block = np.array([[row] if isinstance(row, (int, float)) else row for row in (rows[k] for k in present)],
                             dtype=float).reshape(len(present), -1)
        except (TypeError, ValueError, OverflowError):  # rows of different lengths, or not numbers: find which
            block = np.empty((0, 0))
            converted = {}
            for k in present:
                try:
                    converted[k] = np.atleast_1d(np.asarray(rows[k], dtype=float))
                    if converted[k].ndim != 1:
                        raise ValueError(f"a row of shape {converted[k].shape}, not one row of numbers")
                except (TypeError, ValueError, OverflowError) as error:
                    raise self._unreadable(statistic, k, error) from None
            whole = [k for k in present if not np.isnan(converted[k]).any()]
            width = len(converted[whole[0]]) if whole else 0
            odd = next((k for k in whole if len(converted[k]) != width), None)
            if odd is not None:
                raise RowReadError(f"{self.where[odd]}: the statistic {statistic.label!r} reads {len(converted[odd])} "
                                   f"numbers from this record and {width} from {self.where[whole[0]]}")
            kept = set(whole)
            kinds[[k for k in present if k not in kept]] = FAILED
            return kinds, (np.stack([converted[k] for k in whole]) if whole else np.empty((0, 1)))
        failed = np.isnan(block).any(axis=1)
        kinds[np.array(present, dtype=int)[failed]] = FAILED
        return kinds, block[~failed]

    def _stack(self, statistic: Statistic) -> Items:
        """The run's rows under the statistic as `Items`: ids, an (n, k) matrix with NaN rows where
        unscored, a kind per item."""
        key = (statistic.rows, statistic.id_key)
        if key not in self._rows:
            records = self._needs_records(f"rows of {statistic.label!r}")
            self._rows[key] = [self._read(statistic, rec, k) for k, rec in enumerate(records)]
        if statistic.id_key not in self._ids:
            records = self._needs_records("ids")
            self._ids[statistic.id_key] = tuple(str(rec.get(statistic.id_key, k)) for k, rec in enumerate(records))
        ids = self._ids[statistic.id_key]
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            k = next(k for k, i in enumerate(ids) if i in seen or seen.add(i))
            raise RowReadError(f"{self.where[k]}: id {ids[k]!r} appears twice; pairing by id needs each id once")
        kinds, scored = self._numbers(statistic, self._rows[key])
        values = np.full((len(kinds), scored.shape[1] if len(scored) else 1), np.nan)
        values[kinds == OK] = scored
        return Items(ids, values, kinds, None)


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
    `only`; a record without the id key is named by its position (records a method's evaluation
    makes in Python; `vlmjudge compare` refuses a record without an id)."""
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

    def from_sums(self, sums: np.ndarray, count: np.ndarray) -> np.ndarray:
        """The mean from the column sums and the item count (pooled, `vlmjudge.stats.blocks`)."""
        return sums[..., self.column] / count


@dataclass(frozen=True)
class ColumnShare:
    """Summed column `column` over the summed row totals (0 when nothing was counted): the share of
    one kind among all counted things, pooled over the items."""
    column: int

    def __call__(self, x: np.ndarray, axis: int = 0) -> Any:
        num = np.asarray(np.take(x, self.column, axis=-1).sum(axis=axis), dtype=float)
        den = np.asarray(x.sum(axis=-1).sum(axis=axis), dtype=float)
        return np.divide(num, den, out=np.zeros_like(num), where=den > 0)

    def from_sums(self, sums: np.ndarray, count: np.ndarray) -> np.ndarray:
        """The share from the column sums (pooled, `vlmjudge.stats.blocks`)."""
        num, den = sums[..., self.column], sums.sum(axis=-1)
        return np.divide(num, den, out=np.zeros_like(num), where=den > 0)
