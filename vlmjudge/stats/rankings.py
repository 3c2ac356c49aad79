"""Rankings of models by several metrics: ranks with ties, the mean rank over the metrics, and how
far two metrics' rankings agree (Kendall's tau between them).

A benchmark ranks its models once per metric. TerraVis' Figure 3 orders five models by their mean
rank over eight metrics (1.38 to 4.00 on COCO-T2I) and its Table A4 asks how far evaluators agree
on the order (mean pairwise tau 0.64 and 0.68). A model a metric could not score (NaN) gets no rank
from it: it takes no place and pushes no other model down. Pure numpy and scipy.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from vlmjudge.stats.correlation import MIN_CORRELATION_ITEMS, average_ranks, too_few

#: How tied values share their places: the best of them ("min": 1, 1, 3), or their mean ("average": 1.5, 1.5, 3).
TIES = ("min", "average")


def _direction(higher_is_better: object, what: str = "higher_is_better") -> bool:
    """A metric's better direction; a metric without one (None) ranks nothing."""
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ValueError(f"{what} must be True or False to rank by it, got {higher_is_better!r}")
    return bool(higher_is_better)


def ranks(values: Sequence[float], higher_is_better: bool = True, ties: str = "min") -> np.ndarray:
    """1-based ranks of `values`, best first; NaN for a NaN value (unranked).

    With `ties="min"` tied values share the best of their places and the next value skips the
    places they took (the rank `vlmjudge compare` prints); with "average" they share the mean of
    their places (the ranks Spearman's rho uses).

    Examples:
        >>> ranks([0.75, 0.6, 0.75]).tolist(), ranks([0.75, 0.6, 0.75], ties="average").tolist()
        ([1.0, 3.0, 1.0], [1.5, 3.0, 1.5])
        >>> ranks([2.0, float("nan"), 1.0], higher_is_better=False).tolist()
        [2.0, nan, 1.0]
    """
    better = _direction(higher_is_better)
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"rank one value per model (1-D), got shape {x.shape}")
    oriented = -x if better else x  # smaller is better from here on
    out = np.full(x.shape, np.nan)
    ranked = ~np.isnan(x)
    kept = oriented[ranked]
    if ties == "min":
        out[ranked] = 1 + (kept[None, :] < kept[:, None]).sum(axis=1)
    else:
        out[ranked] = average_ranks(kept)
    return out


def mean_ranks(rank_table: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Each model's mean rank over the metrics that ranked it, and how many did: from a
    (metrics, models) table with NaN where a metric left a model unranked (mean NaN, count 0
    for a model no metric ranked).

    Examples:
        TerraVis' Figure 3 gives only the means on COCO-T2I (1.38, 2.75, 3.00, 3.88, 4.00 over
        eight metrics); any eight rankings whose ranks sum to 11, 22, 24, 31 and 32 give them:

        >>> table = [[1, 2, 3, 4, 5]] * 5 + [[2, 4, 3, 1, 5]] + [[2, 4, 3, 5, 1]] * 2
        >>> means, counts = mean_ranks(table)
        >>> means.tolist(), counts.tolist()
        ([1.375, 2.75, 3.0, 3.875, 4.0], [8, 8, 8, 8, 8])
    """
    table = np.asarray(rank_table, dtype=float)
    if table.ndim != 2:
        raise ValueError(f"a rank table is (metrics, models), got shape {table.shape}")
    ranked = ~np.isnan(table)
    counts = ranked.sum(axis=0)
    totals = np.where(ranked, table, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)
    return means, counts


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> tuple[float, int]:
    """Kendall's tau-b between two metrics' values of the same models, over the models both
    scored (neither value NaN), and how many those are; NaN where it is undefined or says nothing
    (fewer than `MIN_CORRELATION_ITEMS` models: two give +1 or -1 whatever the data; one side
    without spread). The value is `scipy.stats.kendalltau`'s.

    Examples:
        Two metrics order three models with one pair swapped: tau = (2 - 1) / 3:

        >>> tau, n = kendall_tau([0.8, 0.5, 0.3], [4.1, 3.0, 3.5])
        >>> round(tau, 4), n
        (0.3333, 3)
        >>> kendall_tau([1.0, 2.0, float("nan")], [3.0, 3.0, 1.0])
        (nan, 2)
    """
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"tau pairs one value per model on each side, got shapes {x.shape} and {y.shape}")
    both = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[both], y[both]
    n = int(both.sum())
    if n < MIN_CORRELATION_ITEMS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, n
    return float(stats.kendalltau(x, y).statistic), n


def ranking_agreement(values: Mapping[str, Mapping[str, float]],
                      higher_is_better: Mapping[str, bool] | None = None) -> dict:
    """Kendall's tau between every pair of metrics' rankings of the models (metric -> model ->
    value; models a metric lacks or left NaN are left out of its pairs), and the mean over the
    pairs where tau is defined. A metric where lower is better is turned around first, so tau
    compares orders of merit: the tau of two rankings, not of two raw scales.

    Returns {"pairs": {(a, b): tau}, "n_models": {(a, b): models both ranked}, "mean": mean tau,
    "reasons": {(a, b): why tau is absent}} (NaN where undefined; no pairs under two metrics).

    Examples:
        >>> result = ranking_agreement({"terravis": {"A": 0.8, "B": 0.5, "C": 0.3},
        ...                             "fid": {"A": 10.0, "B": 30.0, "C": 20.0}},
        ...                            higher_is_better={"fid": False})
        >>> round(result["pairs"]["terravis", "fid"], 4), result["n_models"]["terravis", "fid"]
        (0.3333, 3)
    """
    directions = {name: _direction((higher_is_better or {}).get(name, True), f"higher_is_better of {name!r}")
                  for name in values}
    pairs, counts = {}, {}
    for a, b in itertools.combinations(values, 2):
        models = [m for m in values[a] if m in values[b]]
        sign_a, sign_b = (1.0 if directions[a] else -1.0), (1.0 if directions[b] else -1.0)
        pairs[a, b], counts[a, b] = kendall_tau([sign_a * float(values[a][m]) for m in models],
                                                [sign_b * float(values[b][m]) for m in models])
    defined = [tau for tau in pairs.values() if not math.isnan(tau)]
    reasons = {key: too_few(counts[key], "models") or "one metric gives every model the same value"
               for key, tau in pairs.items() if math.isnan(tau)}
    return {"pairs": pairs, "n_models": counts, "mean": sum(defined) / len(defined) if defined else math.nan,
            "reasons": reasons}
