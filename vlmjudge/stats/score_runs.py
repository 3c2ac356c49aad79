"""Compare several runs on one benchmark: a leaderboard with bootstrap rank ranges, and every pair
with a paired interval, a permutation p-value and Holm's adjustment across the pairs.

Runs are lists of records (`id`, a numeric `score` or None for N/A, optionally a `status`).
Rank ranges come from resampling the union of ids jointly for all runs, so a rank of "1 to 3"
says how far sampling of the items alone could reorder the board.
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any, Callable, Sequence

import numpy as np

from vlmjudge.stats.multiple import holm
from vlmjudge.stats.paired import paired_bootstrap
from vlmjudge.stats.pairing import FAILED, NA, OK, Reader, read_items
from vlmjudge.stats.permutation import paired_permutation_test
from vlmjudge.stats.resample import cluster_codes


def _union(items: list) -> tuple[list, np.ndarray, np.ndarray]:
    """Ids of all runs in first-seen order, a (ids, runs) value matrix (NaN where unscored), and
    the cluster label of each id (from the first run that has the id; None when unclustered)."""
    ids: dict[Any, int] = {}
    for it in items:
        for i in it.ids:
            ids.setdefault(i, len(ids))
    values = np.full((len(ids), len(items)), np.nan)
    labels = np.empty(len(ids), dtype=object)
    for m, it in enumerate(items):
        rows = np.array([ids[i] for i in it.ids], dtype=int)
        scored = it.kinds == OK
        values[rows[scored], m] = it.values[scored]
        if it.clusters is not None:
            fresh = np.array([labels[r] is None for r in rows], dtype=bool)
            labels[rows[fresh]] = it.clusters[fresh]
    return list(ids), values, labels


def _weights(n_ids: int, codes: np.ndarray | None, rows: int, rng: np.random.Generator) -> np.ndarray:
    """How often each id appears in each resample (ids drawn alone, or whole clusters drawn)."""
    if codes is None:
        draws = rng.integers(0, n_ids, (rows, n_ids))
        units = n_ids
    else:
        units = int(codes.max()) + 1
        draws = rng.integers(0, units, (rows, units))
    counts = np.zeros((rows, units))
    np.add.at(counts, (np.arange(rows)[:, None], draws), 1)
    return counts if codes is None else counts[:, codes]


def _draws(values: np.ndarray, codes: np.ndarray | None, statistic: Callable | None, n_resamples: int,
           rng: np.random.Generator) -> np.ndarray:
    """Each run's statistic on each joint resample: (n_resamples, runs). The mean is a weighted
    sum over ids; another statistic is called once per resample and run on the scored values."""
    scored = ~np.isnan(values)
    filled = np.where(scored, values, 0.0)
    out = np.empty((n_resamples, values.shape[1]))
    step = max(1, 1_000_000 // max(1, len(values)))
    for start in range(0, n_resamples, step):
        w = _weights(len(values), codes, min(step, n_resamples - start), rng)
        if statistic is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start:start + len(w)] = (w @ filled) / (w @ scored)
            continue
        for r, row in enumerate(w):
            idx = np.repeat(np.arange(len(values)), row.astype(int))
            for m in range(values.shape[1]):
                x = values[idx, m]
                x = x[~np.isnan(x)]
                out[start + r, m] = statistic(x) if len(x) else np.nan
    return out


def _ranks(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """1 + how many runs did strictly better, along the last axis (ties share a rank)."""
    better = scores[..., None, :] > scores[..., :, None] if higher_is_better else \
        scores[..., None, :] < scores[..., :, None]
    return 1 + better.sum(axis=-1)


def _leaderboard(labels: list, items: list, values: np.ndarray, draws: np.ndarray, statistic: Callable | None,
                 confidence: float, higher_is_better: bool) -> list[dict]:
    """One row per run, best first: point value, interval, n, rank and its bootstrap range."""
    stat = statistic or np.mean
    point = np.array([stat(values[~np.isnan(values[:, m]), m]) for m in range(values.shape[1])])
    tail = (1 - confidence) / 2
    low, high = np.nanpercentile(draws, [100 * tail, 100 * (1 - tail)], axis=0)
    boot_ranks = _ranks(draws, higher_is_better)
    rank_low = np.quantile(boot_ranks, tail, axis=0, method="lower")
    rank_high = np.quantile(boot_ranks, 1 - tail, axis=0, method="higher")
    rank = _ranks(point, higher_is_better)
    rows = [{"label": labels[m], "mean" if statistic is None else "value": float(point[m]),
             "low": float(low[m]), "high": float(high[m]), "n": int(np.sum(items[m].kinds == OK)),
             "n_na": int(np.sum(items[m].kinds == NA)), "n_failed": int(np.sum(items[m].kinds == FAILED)),
             "rank": int(rank[m]), "rank_low": int(rank_low[m]), "rank_high": int(rank_high[m])}
            for m in range(len(labels))]
    return sorted(rows, key=lambda row: row["rank"])


def compare(runs: Sequence[Sequence[Mapping]] | Mapping[str, Sequence[Mapping]], *, labels: Sequence[str] | None = None,
            statistic: Callable | None = None, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
            cluster: Any = None, higher_is_better: bool = True, value: Reader = "score",
            status_key: str = "status") -> dict:
    """Leaderboard and pairwise comparisons of runs given as record lists (or a label -> records map).

    statistic: None for the mean (vectorised), or a callable on a run's scored values (one call
    per resample; the permutation test still tests the mean difference). cluster: a record key or
    callable naming each item's cluster (e.g. its prompt), resampled whole.
    Returns {"leaderboard": rows best first (key "mean", or "value" under a custom statistic),
    "pairwise": one entry per pair with diff = b - a, "unpaired": per label the ids other runs
    have and it lacks, "n_resamples", "confidence"}.
    """
    if isinstance(runs, Mapping):
        labels, runs = list(runs) if labels is None else list(labels), list(runs.values())
    labels = [f"run{m}" for m in range(len(runs))] if labels is None else list(labels)
    if len(labels) != len(runs) or len(runs) < 1:
        raise ValueError("give at least one run and one label per run")
    items = [read_items(run, value=value, status_key=status_key, cluster=cluster) for run in runs]
    ids, values, cluster_labels = _union(items)
    if values.ndim != 2:
        raise ValueError("compare takes one numeric value per record")
    codes = None if cluster is None else cluster_codes(np.asarray(cluster_labels.astype(str)))[0]
    rng = np.random.default_rng(seed)
    draws = _draws(values, codes, statistic, n_resamples, rng)
    board = _leaderboard(labels, items, values, draws, statistic, confidence, higher_is_better)
    pairs = []
    for i, j in combinations(range(len(runs)), 2):
        boot = paired_bootstrap(runs[i], runs[j], statistic=statistic or np.mean, n_resamples=n_resamples,
                                confidence=confidence, cluster=cluster, seed=seed, value=value,
                                status_key=status_key)
        test = paired_permutation_test(runs[i], runs[j], n_resamples=n_resamples, seed=seed, value=value,
                                       status_key=status_key)
        pairs.append({"a": labels[i], "b": labels[j], "n": boot.n, "diff": boot.diff, "low": boot.low,
                      "high": boot.high, "p_greater": boot.p_greater, "p_value": test.pvalue,
                      "n_one_sided": boot.n_one_sided, "n_unpaired": boot.n_unpaired,
                      "na_share_diff": boot.na_share_diff, "failed_share_diff": boot.failed_share_diff})
    for pair, adjusted in zip(pairs, holm([p["p_value"] for p in pairs])):
        pair["p_holm"] = float(adjusted)
    present = [set(it.ids) for it in items]
    unpaired = {label: [i for i in ids if i not in have] for label, have in zip(labels, present)}
    return {"leaderboard": board, "pairwise": pairs, "unpaired": unpaired,
            "n_resamples": n_resamples, "confidence": confidence}
