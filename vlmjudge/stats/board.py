"""Leaderboard and pairwise comparisons of runs under one method-declared `Statistic`.

Every number is the method's own statistic recomputed on resampled items: intervals and rank
ranges from resampling the union of item ids jointly for all runs, pair differences from the
paired bootstrap, p-values from swapping rows within items, Holm's adjustment over the pairs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from vlmjudge.stats.multiple import holm
from vlmjudge.stats.paired import paired_bootstrap
from vlmjudge.stats.pairing import FAILED, NA, OK, align, read_items
from vlmjudge.stats.statistic import Statistic, item_rows
from vlmjudge.stats.swap import paired_swap_test

#: The pairing code reads rows from "row"; the rows already carry N/A and failure, so no status key.
ROW, NO_STATUS = "row", "\0no-status"


def _union_rows(items: list) -> tuple[list, list[np.ndarray]]:
    """Ids of all runs in first-seen order and each run's rows on them (NaN rows where unscored)."""
    ids: dict = {}
    for it in items:
        for i in it.ids:
            ids.setdefault(i, len(ids))
    width = next((it.values.shape[1:] for it in items if it.values.ndim > 1), ())
    out = []
    for it in items:
        rows = np.full((len(ids), *width), np.nan)
        pos = np.array([ids[i] for i in it.ids], dtype=int)
        ok = it.kinds == OK
        if ok.any():
            rows[pos[ok]] = it.values[ok].reshape(int(ok.sum()), *width)
        out.append(rows)
    return list(ids), out


def _scored(x: np.ndarray) -> np.ndarray:
    """The rows with no NaN in them."""
    return x[~np.isnan(x.reshape(len(x), -1)).any(axis=1)]


def _value(x: np.ndarray, statistic: Statistic) -> float:
    """The statistic on the scored rows; NaN when none is left."""
    kept = _scored(x)
    return float(statistic.compute(kept)) if len(kept) else float("nan")


def joint_draws(rows: list[np.ndarray], statistic: Statistic, n_resamples: int, seed: int) -> np.ndarray:
    """Each run's statistic on the same resamples of the union of ids: (n_resamples, runs)."""
    rng = np.random.default_rng(seed)
    n = len(rows[0])
    out = np.empty((n_resamples, len(rows)))
    for r in range(n_resamples):
        idx = rng.integers(0, n, n)
        out[r] = [_value(x[idx], statistic) for x in rows]
    return out


def _ranks(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """1 + how many runs did strictly better, along the last axis (NaN ranks last, ties share)."""
    filled = np.where(np.isnan(scores), -np.inf if higher_is_better else np.inf, scores)
    better = filled[..., None, :] > filled[..., :, None] if higher_is_better else \
        filled[..., None, :] < filled[..., :, None]
    return 1 + better.sum(axis=-1)


def leaderboard(labels: Sequence[str], items: list, rows: list[np.ndarray], statistic: Statistic,
                n_resamples: int, seed: int, confidence: float) -> list[dict]:
    """One row per run: value, interval, counts, and (with a better direction) rank and its range."""
    draws = joint_draws(rows, statistic, n_resamples, seed)
    point = np.array([_value(x, statistic) for x in rows])
    tail = (1 - confidence) / 2
    with np.errstate(all="ignore"):
        low, high = np.nanpercentile(draws, [100 * tail, 100 * (1 - tail)], axis=0)
    board = [{"label": labels[m], "value": float(point[m]), "low": float(low[m]), "high": float(high[m]),
              "n": int(np.sum(items[m].kinds == OK)), "n_na": int(np.sum(items[m].kinds == NA)),
              "n_failed": int(np.sum(items[m].kinds == FAILED))} for m in range(len(labels))]
    if statistic.higher_is_better is None:
        return board
    better = statistic.higher_is_better
    rank, boot = _ranks(point, better), _ranks(draws, better)
    rank_low = np.quantile(boot, tail, axis=0, method="lower")
    rank_high = np.quantile(boot, 1 - tail, axis=0, method="higher")
    for m, row in enumerate(board):
        row.update(rank=int(rank[m]), rank_low=int(rank_low[m]), rank_high=int(rank_high[m]))
    return sorted(board, key=lambda row: row["rank"])


def pairwise(labels: Sequence[str], runs: list[list[dict]], statistic: Statistic, n_resamples: int, seed: int,
             confidence: float, tests: bool = True) -> list[dict]:
    """Every pair (a before b in the given order): diff = b - a, its paired interval, and with
    `tests` the swap-test p-value with Holm's adjustment over the pairs."""
    out = []
    for i, j in combinations(range(len(runs)), 2):
        entry = {"a": labels[i], "b": labels[j]}
        try:
            boot = paired_bootstrap(runs[i], runs[j], statistic=statistic.compute, n_resamples=n_resamples,
                                    confidence=confidence, seed=seed, value=ROW, status_key=NO_STATUS)
        except ValueError as error:  # no item scored by both runs: said, not hidden
            out.append({**entry, "n": 0, "note": str(error)})
            continue
        entry.update(n=boot.n, diff=boot.diff, low=boot.low, high=boot.high, p_greater=boot.p_greater,
                     n_one_sided=boot.n_one_sided, n_unpaired=boot.n_unpaired,
                     na_share_diff=boot.na_share_diff, failed_share_diff=boot.failed_share_diff)
        if tests:
            paired = align(runs[i], runs[j], value=ROW, status_key=NO_STATUS)
            entry["p_value"] = paired_swap_test(paired.a, paired.b, statistic.compute, n_resamples, seed).pvalue
        out.append(entry)
    tested = [e for e in out if "p_value" in e]
    if tested:
        for entry, adjusted in zip(tested, holm([e["p_value"] for e in tested])):
            entry["p_holm"] = float(adjusted)
    return out


def compare_statistic(records: Sequence[Sequence[Mapping]], labels: Sequence[str], statistic: Statistic, *,
                      n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
                      only: str | None = None, tests: bool = True) -> dict:
    """Leaderboard, pairwise entries and unpaired ids of runs (record lists) under one statistic;
    `only` restricts it to one category of the statistic's `split`."""
    runs = [item_rows(recs, statistic, only) for recs in records]
    items = [read_items(run, value=ROW, status_key=NO_STATUS) for run in runs]
    ids, rows = _union_rows(items)
    present = [set(it.ids) for it in items]
    return {"leaderboard": leaderboard(labels, items, rows, statistic, n_resamples, seed, confidence),
            "pairwise": pairwise(labels, runs, statistic, n_resamples, seed, confidence, tests),
            "unpaired": {label: [i for i in ids if i not in have] for label, have in zip(labels, present)}}
