"""Paired bootstrap of the difference between two runs on the same items.

Both runs are resampled with the same index draws, so the per-item pairing (same prompt, same
image, same question) removes the between-item variance that an unpaired comparison would carry.
The statistic is recomputed on every resample, which also covers non-additive statistics such as
micro F1 from summed counts or a rank correlation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vlmjudge.stats.pairing import Missing, Reader, align
from vlmjudge.stats.resample import Statistic, bootstrap_distribution, interval, jackknife


@dataclass(frozen=True)
class PairedBootstrap(Missing):
    """diff = statistic(b) - statistic(a) on the paired items, its interval, P(diff > 0) over the
    resamples, and what the pairing left out (`Missing`: shares are per run, over its items)."""
    diff: float
    low: float
    high: float
    p_greater: float
    n: int
    n_resamples: int
    confidence: float
    method: str


def paired_bootstrap(a: Any, b: Any, statistic: Statistic = np.mean, n_resamples: int = 10_000,
                     confidence: float = 0.95, cluster: Any = None, seed: int = 0,
                     method: str = "percentile", *, value: Reader = "score", status_key: str = "status",
                     vectorized: bool | None = None) -> PairedBootstrap:
    """Interval for statistic(b) - statistic(a), resampling items (or whole clusters) jointly.

    a, b: arrays paired by position, shape (n,) or (n, k), with None for N/A and NaN for a failure;
    or records (mappings with `id`) paired by id, the value read by `value` (a key or a callable)
    and a `status_key` of "failed"/"error" or "not_applicable" overriding it.
    statistic: maps an (n,) or (n, k) array to a float; if it takes `axis`, it is called on a
    batch of resamples with the items on axis 1 (so `x.sum(axis=axis)` style code serves both).
    cluster: labels per item (for records, a key or a callable on a's records); whole clusters
    are resampled. method: "percentile" or "bca" (jackknife acceleration, over clusters if any).
    """
    paired = align(a, b, value=value, status_key=status_key, cluster=cluster)
    if len(paired.a) == 0:
        raise ValueError("no item was scored by both runs")
    samples = (paired.a, paired.b)
    diff = float(statistic(paired.b) - statistic(paired.a))
    rng = np.random.default_rng(seed)
    stats = bootstrap_distribution(samples, statistic, n_resamples, rng, paired.clusters, vectorized)
    draws = stats[:, 1] - stats[:, 0]

    def jack() -> np.ndarray:
        """Leave-one-out differences, for the BCa acceleration."""
        values = jackknife(samples, statistic, paired.clusters, vectorized)
        return values[:, 1] - values[:, 0]

    low, high = interval(draws, diff, confidence, method, jack)
    return PairedBootstrap(
        diff=diff, low=low, high=high, p_greater=float(np.mean(draws > 0)), n=len(paired.a),
        n_resamples=n_resamples, confidence=confidence, method=method, **vars(paired.missing))
