"""Reading a run's per-item values and lining two runs up item by item.

A paired comparison is only fair on the items both runs scored. Items one run could not score
(N/A or failed) are left out of the statistic but counted, so that a run which makes more items
ineligible is seen doing so instead of looking better for it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

OK, NA, FAILED = 0, 1, 2
FAILED_STATUSES = frozenset({"failed", "error"})
NA_STATUSES = frozenset({"not_applicable", "na", "n/a"})

Reader = str | Callable[[Mapping], Any]


@dataclass(frozen=True)
class Items:
    """One run: ids, values (NaN rows where not scored), a kind per item (OK, NA, FAILED), clusters."""
    ids: tuple
    values: np.ndarray
    kinds: np.ndarray
    clusters: np.ndarray | None


@dataclass(frozen=True)
class Missing:
    """What the pairing left out, and each run's share of N/A and failed items."""
    n_items: int
    n_one_sided: int
    n_both_missing: int
    n_unpaired: int
    na_share_a: float
    na_share_b: float
    failed_share_a: float
    failed_share_b: float

    @property
    def na_share_diff(self) -> float:
        """How much more often run b was N/A than run a (b - a): read beside a difference."""
        return self.na_share_b - self.na_share_a

    @property
    def failed_share_diff(self) -> float:
        """How much more often run b failed than run a (b - a): read beside a difference."""
        return self.failed_share_b - self.failed_share_a


@dataclass(frozen=True)
class Paired:
    """Values of the items both runs scored, in the same order, with their clusters and ids."""
    a: np.ndarray
    b: np.ndarray
    clusters: np.ndarray | None
    ids: tuple
    missing: Missing


def is_records(x: Any) -> bool:
    """Records are a non-empty sequence of mappings (each with an `id`); anything else is an array."""
    return not isinstance(x, np.ndarray) and len(x) > 0 and isinstance(next(iter(x)), Mapping)


def _kind_of(v: Any) -> int:
    """None is N/A, any NaN is a failure, everything else was scored."""
    if v is None:
        return NA
    return FAILED if np.isnan(np.asarray(v, dtype=float)).any() else OK


def _stack(values: list, kinds: np.ndarray) -> np.ndarray:
    """Float matrix of the values, NaN rows for unscored items (width from the first scored one)."""
    ok = [np.asarray(v, dtype=float) for v, k in zip(values, kinds) if k == OK]
    shape = ok[0].shape if ok else ()
    out = np.full((len(values), *shape), np.nan)
    for i, (v, k) in enumerate(zip(values, kinds)):
        if k == OK:
            out[i] = v
    return out


def _read_value(rec: Mapping, value: Reader, status_key: str) -> Any:
    """A record's value, with its status turning it into N/A (None) or a failure (NaN)."""
    status = rec.get(status_key)
    if status in FAILED_STATUSES:
        return float("nan")
    if status in NA_STATUSES:
        return None
    return value(rec) if callable(value) else rec.get(value)


def read_items(x: Any, *, value: Reader = "score", status_key: str = "status",
               cluster: Any = None) -> Items:
    """One run as Items, from an array (positions are ids) or from records with an `id` key.

    `cluster` is a sequence of labels aligned with the items, or for records a key or a callable.
    """
    if is_records(x):
        ids = tuple(rec["id"] for rec in x)
        if len(set(ids)) != len(ids):
            raise ValueError("records repeat an id; pairing by id needs each id once per run")
        raw = [_read_value(rec, value, status_key) for rec in x]
        if isinstance(cluster, str) or callable(cluster):
            cluster = [cluster(rec) if callable(cluster) else rec[cluster] for rec in x]
    else:
        raw = list(x) if _has_none(x) else np.asarray(x, dtype=float)
        ids = tuple(range(len(raw)))
    if isinstance(raw, np.ndarray):
        flat = np.isnan(raw.reshape(len(raw), -1)).any(axis=1)
        kinds = np.where(flat, FAILED, OK).astype(np.int8)
        values = raw
    else:
        kinds = np.array([_kind_of(v) for v in raw], dtype=np.int8)
        values = _stack(raw, kinds)
    clusters = None if cluster is None else np.asarray(cluster)
    if clusters is not None and len(clusters) != len(ids):
        raise ValueError(f"cluster has {len(clusters)} labels for {len(ids)} items")
    return Items(ids, values, kinds, clusters)


def _has_none(x: Any) -> bool:
    """Whether an array-like holds None anywhere (then it is read item by item)."""
    return not isinstance(x, np.ndarray) and any(v is None for v in x)


def _share(kinds: np.ndarray, kind: int) -> float:
    """Share of a run's items of one kind (0 for an empty run)."""
    return float(np.mean(kinds == kind)) if len(kinds) else 0.0


def align(a: Any, b: Any, *, value: Reader = "score", status_key: str = "status",
          cluster: Any = None) -> Paired:
    """Pair two runs by position (arrays) or by id (records), keeping items both runs scored.

    Clusters come from run a (for records, a key or callable read on a's records).
    """
    if is_records(a) != is_records(b):
        raise ValueError("pair records with records and arrays with arrays")
    ia = read_items(a, value=value, status_key=status_key, cluster=cluster)
    ib = read_items(b, value=value, status_key=status_key)
    if not is_records(a) and len(ia.ids) != len(ib.ids):
        raise ValueError(f"arrays pair by position and differ in length ({len(ia.ids)} vs {len(ib.ids)})")
    return align_items(ia, ib)


def align_items(ia: Items, ib: Items) -> Paired:
    """`align` on two runs already read as Items: the items both scored, in a's order, with a's clusters."""
    pos_b = {i: n for n, i in enumerate(ib.ids)}
    common = [(n, pos_b[i]) for n, i in enumerate(ia.ids) if i in pos_b]
    in_a = np.array([n for n, _ in common], dtype=int)
    in_b = np.array([m for _, m in common], dtype=int)
    ka, kb = ia.kinds[in_a], ib.kinds[in_b]
    both = (ka == OK) & (kb == OK)
    rows_a, rows_b = in_a[both], in_b[both]
    n_unpaired = len(ia.ids) + len(ib.ids) - 2 * len(common)
    missing = Missing(
        n_items=len(common) + n_unpaired, n_one_sided=int(np.sum((ka == OK) != (kb == OK))),
        n_both_missing=int(np.sum((ka != OK) & (kb != OK))), n_unpaired=n_unpaired,
        na_share_a=_share(ia.kinds, NA), na_share_b=_share(ib.kinds, NA),
        failed_share_a=_share(ia.kinds, FAILED), failed_share_b=_share(ib.kinds, FAILED))
    clusters = None if ia.clusters is None else ia.clusters[rows_a]
    return Paired(ia.values[rows_a], ib.values[rows_b], clusters,
                  tuple(ia.ids[n] for n in rows_a), missing)
