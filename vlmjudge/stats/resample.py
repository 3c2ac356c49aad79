"""The bootstrap engine shared by the interval functions: resample items or whole clusters,
evaluate statistics on many resamples at once, and turn the draws into percentile or BCa bounds.

Resamples are index matrices evaluated in chunks (no Python loop per resample) whenever the
statistic takes an `axis` argument; whole clusters are resampled when labels are given, since
several questions about one image are not independent evidence.
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

import numpy as np
from scipy.special import ndtr, ndtri

Statistic = Callable[..., float]
_CHUNK_CELLS = 2_000_000


def accepts_axis(statistic: Statistic) -> bool:
    """Whether a statistic can be called on a batch with `axis=` (then resamples are vectorised)."""
    try:
        return "axis" in inspect.signature(statistic).parameters
    except (TypeError, ValueError):
        return False


def _is_mean(statistic: Statistic) -> bool:
    """The mean gets closed forms (cluster sums, jackknife) that any statistic could not."""
    return statistic is np.mean or statistic is np.nanmean


def _evaluate(samples: Sequence[np.ndarray], statistic: Statistic, idx: np.ndarray, vectorized: bool) -> np.ndarray:
    """Statistic of every sample on every row of an index matrix: shape (rows, len(samples))."""
    out = np.empty((len(idx), len(samples)))
    for j, x in enumerate(samples):
        if vectorized:
            out[:, j] = statistic(x[idx], axis=1)
        else:
            out[:, j] = [statistic(x[row]) for row in idx]
    return out


def _rows_per_chunk(n: int, samples: Sequence[np.ndarray]) -> int:
    """Resamples per chunk so one gathered batch stays around a few million cells."""
    width = max(int(np.prod(x.shape[1:])) for x in samples)
    return max(1, _CHUNK_CELLS // max(1, n * width))


def cluster_codes(clusters: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Integer code per item and the item indices of each cluster."""
    _, codes = np.unique(clusters, return_inverse=True)
    codes = codes.reshape(-1)
    members = [np.flatnonzero(codes == c) for c in range(codes.max() + 1)] if len(codes) else []
    return codes, members


def bootstrap_distribution(samples: Sequence[np.ndarray], statistic: Statistic, n_resamples: int,
                           rng: np.random.Generator, clusters: np.ndarray | None = None,
                           vectorized: bool | None = None) -> np.ndarray:
    """Statistic of each sample on the same resamples: shape (n_resamples, len(samples)).

    Every sample is indexed by the same draws, which is what pairs a comparison.
    """
    vec = accepts_axis(statistic) if vectorized is None else vectorized
    n = len(samples[0])
    out = np.empty((n_resamples, len(samples)))
    if clusters is None:
        step = _rows_per_chunk(n, samples)
        for start in range(0, n_resamples, step):
            rows = min(step, n_resamples - start)
            out[start:start + rows] = _evaluate(samples, statistic, rng.integers(0, n, (rows, n)), vec)
        return out
    codes, members = cluster_codes(clusters)
    n_clusters = len(members)
    sizes = np.array([len(m) for m in members])
    if _is_mean(statistic) and (sizes != sizes[0]).any():
        # Unequal clusters under the mean: a resample's mean is its clusters' summed values over summed sizes.
        sums = [np.stack([x[m].sum(axis=0) for m in members]) for x in samples]
        step = _rows_per_chunk(n_clusters, samples)
        for start in range(0, n_resamples, step):
            draws = rng.integers(0, n_clusters, (min(step, n_resamples - start), n_clusters))
            total = sizes[draws].sum(axis=1)
            for j, s in enumerate(sums):
                out[start:start + len(draws), j] = s[draws].sum(axis=1) / total
        return out
    if (sizes == sizes[0]).all():
        # Equal clusters: a resample is a rectangular index matrix of whole clusters.
        table = np.stack(members)
        step = _rows_per_chunk(n, samples)
        for start in range(0, n_resamples, step):
            draws = rng.integers(0, n_clusters, (min(step, n_resamples - start), n_clusters))
            out[start:start + len(draws)] = _evaluate(samples, statistic, table[draws].reshape(len(draws), -1), vec)
        return out
    # Unequal clusters under an arbitrary statistic: resamples differ in length, one call each.
    for r in range(n_resamples):
        idx = np.concatenate([members[c] for c in rng.integers(0, n_clusters, n_clusters)])
        out[r] = [statistic(x[idx]) for x in samples]
    return out


def jackknife(samples: Sequence[np.ndarray], statistic: Statistic, clusters: np.ndarray | None = None,
              vectorized: bool | None = None) -> np.ndarray:
    """Leave-one-out statistic of each sample (leave one cluster out when clustered): (units, samples)."""
    vec = accepts_axis(statistic) if vectorized is None else vectorized
    n = len(samples[0])
    units = n if clusters is None else len(np.unique(clusters))
    if units < 2:
        raise ValueError("the jackknife (BCa acceleration) needs at least two items or clusters")
    if clusters is not None:
        codes, members = cluster_codes(clusters)
        return np.array([[statistic(x[codes != c]) for x in samples] for c in range(len(members))])
    if _is_mean(statistic):
        return np.stack([(x.sum(axis=0) - x) / (n - 1) for x in samples], axis=1)
    out = np.empty((n, len(samples)))
    step = _rows_per_chunk(n, samples)
    base = np.arange(n - 1)
    for start in range(0, n, step):
        left = np.arange(start, min(n, start + step))
        idx = base + (base >= left[:, None])
        out[start:start + len(left)] = _evaluate(samples, statistic, idx, vec)
    return out


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """Equal-tailed percentile bounds of the bootstrap draws."""
    tail = (1 - confidence) / 2
    low, high = np.percentile(draws, [100 * tail, 100 * (1 - tail)])
    return float(low), float(high)


def bca_interval(draws: np.ndarray, estimate: float, jack: np.ndarray, confidence: float) -> tuple[float, float]:
    """Bias-corrected and accelerated bounds (Efron 1987): the percentile levels are shifted by the
    draws' median bias z0 and by the jackknife skewness (acceleration) of the statistic."""
    below = (np.sum(draws < estimate) + np.sum(draws <= estimate)) / (2 * len(draws))
    below = np.clip(below, 0.5 / len(draws), 1 - 0.5 / len(draws))
    z0 = ndtri(below)
    dev = jack.mean() - jack
    spread = np.sum(dev ** 2)
    accel = np.sum(dev ** 3) / (6 * spread ** 1.5) if spread > 0 else 0.0
    tail = (1 - confidence) / 2
    levels = []
    for z in (ndtri(tail), ndtri(1 - tail)):
        levels.append(ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z))))
    low, high = np.percentile(draws, [100 * levels[0], 100 * levels[1]])
    return float(low), float(high)


def interval(draws: np.ndarray, estimate: float, confidence: float, method: str,
             jack: Callable[[], np.ndarray]) -> tuple[float, float]:
    """Bounds by method name; the jackknife is computed only for BCa."""
    if method == "percentile":
        return percentile_interval(draws, confidence)
    if method == "bca":
        return bca_interval(draws, estimate, jack(), confidence)
    raise ValueError(f"method must be 'percentile' or 'bca', not {method!r}")
