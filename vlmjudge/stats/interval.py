"""One run's summary with its bootstrap interval, cluster-aware, counting unscored items.

A mean without an interval cannot tell a reader whether two runs differ; with several questions
per image the items are not independent, so clusters can be resampled whole.
`mean_with_interval` is the fixed-seed form every method's summary prints beside its means.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from vlmjudge.stats.pairing import NA, FAILED, OK, Reader, read_items
from vlmjudge.stats.resample import Statistic, bootstrap_distribution, interval, jackknife
from vlmjudge.text import format_score


@dataclass(frozen=True)
class Interval:
    """value = statistic on the scored items, its interval, and the run's N/A and failure counts."""
    value: float
    low: float
    high: float
    n: int
    n_resamples: int
    confidence: float
    method: str
    n_na: int
    n_failed: int

    @property
    def na_share(self) -> float:
        """Share of the run's items that were N/A."""
        return self.n_na / (self.n + self.n_na + self.n_failed)

    @property
    def failed_share(self) -> float:
        """Share of the run's items that failed."""
        return self.n_failed / (self.n + self.n_na + self.n_failed)


def bootstrap_ci(x: Any, statistic: Statistic = np.mean, n_resamples: int = 10_000, confidence: float = 0.95,
                 cluster: Any = None, seed: int = 0, method: str = "percentile", *, value: Reader = "score",
                 status_key: str = "status", vectorized: bool | None = None) -> Interval:
    """Statistic of one run with a percentile or BCa bootstrap interval (inputs as paired_bootstrap)."""
    items = read_items(x, value=value, status_key=status_key, cluster=cluster)
    keep = items.kinds == OK
    if not keep.any():
        raise ValueError("no item was scored")
    values = items.values[keep]
    clusters = None if items.clusters is None else items.clusters[keep]
    estimate = float(statistic(values))
    rng = np.random.default_rng(seed)
    draws = bootstrap_distribution((values,), statistic, n_resamples, rng, clusters, vectorized)[:, 0]
    low, high = interval(draws, estimate, confidence, method,
                         lambda: jackknife((values,), statistic, clusters, vectorized)[:, 0])
    return Interval(value=estimate, low=low, high=high, n=int(keep.sum()), n_resamples=n_resamples,
                    confidence=confidence, method=method, n_na=int(np.sum(items.kinds == NA)),
                    n_failed=int(np.sum(items.kinds == FAILED)))


#: Resamples behind every summary's interval: about 0.3 s for 5,000 items on one CPU core, fast
#: enough for a console line, and plenty for the 2.5% and 97.5% percentiles of a mean.
SUMMARY_RESAMPLES = 2_000
#: The seed of every summary's interval, so the same scores always print the same bounds.
SUMMARY_SEED = 0


def mean_with_interval(values: Iterable[float | None], confidence: float = 0.95) -> dict[str, Any]:
    """The mean a summary shows with its 95% percentile bootstrap interval and its n, the same
    every time (`SUMMARY_RESAMPLES` resamples, seed `SUMMARY_SEED`).

    None and NaN are left out, as the methods' means leave out N/A and unscored items; `n` counts
    the values averaged. Under two values there is no spread to resample: `low` and `high` are
    None (and `mean` too when there is none). Identical values give a zero-width interval.

    Examples:
        >>> mean_with_interval([0.5, None, 0.5])
        {'mean': 0.5, 'low': 0.5, 'high': 0.5, 'n': 2}
        >>> mean_with_interval([0.7])
        {'mean': 0.7, 'low': None, 'high': None, 'n': 1}
    """
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    mean = math.fsum(kept) / len(kept) if kept else None
    if len(kept) < 2:
        return {"mean": mean, "low": None, "high": None, "n": len(kept)}
    if min(kept) == max(kept):
        return {"mean": mean, "low": mean, "high": mean, "n": len(kept)}
    ci = bootstrap_ci(np.asarray(kept), n_resamples=SUMMARY_RESAMPLES, confidence=confidence, seed=SUMMARY_SEED)
    # The bounds come from np.mean of resamples, the mean from an exact sum: keep the mean inside
    # when the two differ in the last bits.
    return {"mean": mean, "low": min(ci.low, mean), "high": max(ci.high, mean), "n": len(kept)}


#: What a table column of `interval_text` phrases adds to its heading, e.g. "mean score [95% interval] (n)".
INTERVAL_HEADING = "[95% interval] (n)"


def interval_text(summary: Mapping[str, Any], number: Callable[[float], str] = format_score) -> str:
    """A `mean_with_interval` summary as one phrase, e.g. `0.7140 [0.6400, 0.7810] (n=48)`; without
    an interval `0.7140 (n=1, no interval under 2 items)`, without a mean `n/a (n=0)`. Numbers as
    every score is printed (`vlmjudge.text.format_score`) unless `number` says otherwise.

    Examples:
        >>> interval_text({"mean": 0.714, "low": 0.64, "high": 0.781, "n": 48})
        '0.7140 [0.6400, 0.7810] (n=48)'
    """
    if summary["mean"] is None:
        return f"n/a (n={summary['n']})"
    if summary["low"] is None:
        return f"{number(summary['mean'])} (n={summary['n']}, no interval under 2 items)"
    return f"{number(summary['mean'])} {_bounds_text(summary, number)} (n={summary['n']})"


def _bounds_text(summary: Mapping[str, Any], number: Callable[[float], str] = format_score) -> str:
    """Only the bounds of a `mean_with_interval` summary, `[0.6400, 0.7810]`, or `n/a` without them."""
    if summary["low"] is None:
        return "n/a"
    return f"[{number(summary['low'])}, {number(summary['high'])}]"


def mean_keys(name: str, values: Iterable[float | None]) -> dict[str, Any]:
    """A result's mean `name` (None and NaN left out; None when nothing is left) beside its 95%
    bootstrap interval `<name>_ci` = [low, high] (None under two values; fixed seed, so the same
    values give the same bounds) and `<name>_n`, the number of values averaged.

    Examples:
        >>> mean_keys("clip", [80.0, 80.0, None])
        {'clip': 80.0, 'clip_ci': [80.0, 80.0], 'clip_n': 2}
        >>> mean_keys("clip", [80.0])
        {'clip': 80.0, 'clip_ci': None, 'clip_n': 1}
    """
    summary = mean_with_interval(values)
    bounds = None if summary["low"] is None else [summary["low"], summary["high"]]
    return {name: summary["mean"], f"{name}_ci": bounds, f"{name}_n": summary["n"]}
