"""One run's summary with its bootstrap interval, cluster-aware, counting unscored items.

A mean without an interval cannot tell a reader whether two runs differ; with several questions
per image the items are not independent, so clusters can be resampled whole.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vlmjudge.stats.pairing import NA, FAILED, OK, Reader, read_items
from vlmjudge.stats.resample import Statistic, bootstrap_distribution, interval, jackknife


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
