"""Leaderboard and pairwise comparisons of runs under method-declared `Statistic`s.

Every number is the method's own statistic recomputed on resampled items: intervals and rank
ranges from resampling the union of item ids jointly for all runs, pair differences from the
paired bootstrap, p-values from swapping rows within items, Holm's adjustment over the pairs.
`compare_statistics` takes many statistics (and categories) of the same runs at once: a pooled one
(`vlmjudge.stats.blocks`) shares each block of resamples with every other resting on the same
items, and the draws are those of the one-statistic functions for the same seed. Each row and pair
says how many items it rests on and whether they are too few (`vlmjudge.stats.reliability`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from vlmjudge.stats.blocks import block_rows, is_pooled, pooled_columns, pooled_values, resampled_sums, swapped_sums
from vlmjudge.stats.multiple import holm
from vlmjudge.stats.paired import paired_bootstrap
from vlmjudge.stats.pairing import FAILED, NA, OK, Items, Paired, align_items, read_items
from vlmjudge.stats.reliability import SMALL_N_NOTE, consistency_note, unreliable
from vlmjudge.stats.resample import percentile_interval
from vlmjudge.stats.statistic import RecordRows, Statistic
from vlmjudge.stats.swap import paired_swap_test, swap_pvalue

#: The pairing code reads rows from "row"; the rows already carry N/A and failure, so no status key.
ROW, NO_STATUS = "row", "\0no-status"
#: One comparison asked of `compare_statistics`: the statistic, the category it is restricted to
#: (None: every item), and whether its pairs get swap tests.
Job = tuple[Statistic, "str | None", bool]


def _union_ids(items: list) -> tuple[list, list[np.ndarray]]:
    """Ids of all runs in first-seen order, and each run's items' positions among them."""
    ids: dict = {}
    for it in items:
        for i in it.ids:
            ids.setdefault(i, len(ids))
    return list(ids), [np.array([ids[i] for i in it.ids], dtype=int) for it in items]


def _union_rows(items: list, union: tuple[list, list[np.ndarray]] | None = None) -> tuple[list, list[np.ndarray]]:
    """Ids of all runs in first-seen order and each run's rows on them (NaN rows where unscored);
    `union` is `_union_ids(items)` when already made."""
    ids, positions = union or _union_ids(items)
    width = next((it.values.shape[1:] for it in items if it.values.ndim > 1), ())
    out = []
    for it, pos in zip(items, positions):
        rows = np.full((len(ids), *width), np.nan)
        ok = it.kinds == OK
        if ok.any():
            rows[pos[ok]] = it.values[ok].reshape(int(ok.sum()), *width)
        out.append(rows)
    return ids, out


def _scored(x: np.ndarray) -> np.ndarray:
    """The rows with no NaN in them."""
    return x[~np.isnan(x.reshape(len(x), -1)).any(axis=1)]


def _value(x: np.ndarray, statistic: Statistic) -> float:
    """The statistic on the scored rows; NaN when none is left."""
    kept = _scored(x)
    return float(statistic.compute(kept)) if len(kept) else float("nan")


def _pooled_draws(runs_rows: list[list[np.ndarray]], computes: list[Any], n_resamples: int,
                  seed: int) -> list[np.ndarray]:
    """Per (rows of each run, pooled compute) on the same n items: each run's statistic on the same
    resamples, (n_resamples, runs); one pass of blocks serves them all, and rows met twice (several
    statistics reading one row reader) are summed once."""
    columns, where, placed = [], [], {}
    for rows, compute in zip(runs_rows, computes):
        spans = []
        for x in rows:
            key = (id(x), id(compute) if getattr(compute, "terms", None) is not None else None)
            if key not in placed:
                block = pooled_columns(compute, x)
                start = sum(c.shape[1] for c in columns)
                columns.append(block)
                placed[key] = (start, start + block.shape[1])
            spans.append(placed[key])
        where.append(spans)
    sums = resampled_sums(np.hstack(columns), n_resamples, np.random.default_rng(seed))
    return [np.stack([pooled_values(compute, sums[:, a:b]) for a, b in spans], axis=1)
            for compute, spans in zip(computes, where)]


def joint_draws(rows: list[np.ndarray], statistic: Statistic, n_resamples: int, seed: int) -> np.ndarray:
    """Each run's statistic on the same resamples of the union of ids: (n_resamples, runs)."""
    if is_pooled(statistic.compute):
        return _pooled_draws([rows], [statistic.compute], n_resamples, seed)[0]
    rng = np.random.default_rng(seed)
    n = len(rows[0])
    out = np.empty((n_resamples, len(rows)))
    step = block_rows(n)
    for start in range(0, n_resamples, step):
        draws = rng.integers(0, n, (min(step, n_resamples - start), n))
        out[start:start + len(draws)] = np.stack([statistic.compute_many(x, draws) for x in rows], axis=1)
    return out


def _ranks(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """1 + how many runs did strictly better, along the last axis (NaN ranks last, ties share)."""
    filled = np.where(np.isnan(scores), -np.inf if higher_is_better else np.inf, scores)
    better = filled[..., None, :] > filled[..., :, None] if higher_is_better else \
        filled[..., None, :] < filled[..., :, None]
    return 1 + better.sum(axis=-1)


def leaderboard(labels: Sequence[str], items: list, rows: list[np.ndarray], statistic: Statistic,
                n_resamples: int, seed: int, confidence: float, draws: np.ndarray | None = None) -> list[dict]:
    """One row per run: value, interval, counts, and (with a better direction) rank and its range.
    `draws` are the runs' `joint_draws`, when already made."""
    draws = joint_draws(rows, statistic, n_resamples, seed) if draws is None else draws
    point = np.array([_value(x, statistic) for x in rows])
    tail = (1 - confidence) / 2
    with np.errstate(all="ignore"):
        low, high = np.nanpercentile(draws, [100 * tail, 100 * (1 - tail)], axis=0)
    n_items = len(set().union(*(it.ids for it in items)))  # every run's ids: an absent item is unscored too
    board = []
    for m in range(len(labels)):
        scored = int(np.sum(items[m].kinds == OK))
        board.append({"label": labels[m], "value": float(point[m]), "low": float(low[m]), "high": float(high[m]),
                      "n": scored, "n_na": int(np.sum(items[m].kinds == NA)),
                      "n_failed": int(np.sum(items[m].kinds == FAILED)), "n_unscored": n_items - scored,
                      "n_items": n_items, "unreliable": unreliable(scored)})
    if statistic.higher_is_better is None:
        return board
    better = statistic.higher_is_better
    rank, boot = _ranks(point, better), _ranks(draws, better)
    rank_low = np.quantile(boot, tail, axis=0, method="lower")
    rank_high = np.quantile(boot, 1 - tail, axis=0, method="higher")
    for m, row in enumerate(board):
        row.update(rank=int(rank[m]), rank_low=int(rank_low[m]), rank_high=int(rank_high[m]))
    return sorted(board, key=lambda row: row["rank"])


def _entry(a: str, b: str, paired: Paired, statistic: Statistic) -> dict:
    """A pair's entry before its interval: the difference on the paired items and what was left out."""
    missing = paired.missing
    entry = {"a": a, "b": b, "n": len(paired.a),
             "diff": float(statistic.compute(paired.b) - statistic.compute(paired.a)),
             "n_one_sided": missing.n_one_sided, "n_unpaired": missing.n_unpaired,
             "na_share_diff": missing.na_share_diff, "failed_share_diff": missing.failed_share_diff,
             "unreliable": unreliable(len(paired.a))}
    return {**entry, "note": SMALL_N_NOTE} if entry["unreliable"] else entry


def _interval_fields(draws: np.ndarray, confidence: float) -> dict:
    """Interval and P(diff > 0) of a pair's bootstrap differences."""
    low, high = percentile_interval(draws, confidence)
    return {"low": low, "high": high, "p_greater": float(np.mean(draws > 0))}


def _pooled_pairs(members: list, n_resamples: int, seed: int, confidence: float) -> None:
    """Fill in the interval (and swap-test p-value) of every pooled pair resting on the same paired
    items: one pass of bootstrap blocks and one of swap blocks serves them all."""
    computes = [stat.compute for _, stat, _, _, _ in members]
    both = [[a, b] for _, _, a, b, _ in members]
    for (entry, _, _, _, _), draws in zip(members, _pooled_draws(both, computes, n_resamples, seed)):
        entry.update(_interval_fields(draws[:, 1] - draws[:, 0], confidence))
    tested = [m for m in members if m[4]]
    if not tested:
        return
    sides = [[pooled_columns(stat.compute, side) for side in (a, b)] for _, stat, a, b, _ in tested]
    sums_a, sums_b = swapped_sums(np.hstack([s[0] for s in sides]), np.hstack([s[1] for s in sides]),
                                  n_resamples, np.random.default_rng(seed))
    start = 0
    for (entry, stat, _, _, _), (cols, _) in zip(tested, sides):
        span = slice(start, start + cols.shape[1])
        start += cols.shape[1]
        null = pooled_values(stat.compute, sums_b[:, span]) - pooled_values(stat.compute, sums_a[:, span])
        entry.update(p_value=swap_pvalue(entry["diff"], null), exact_test=False)


def _pairs(labels: Sequence[str], job_items: list[list[Items]], jobs: Sequence[Job], n_resamples: int,
           seed: int, confidence: float) -> list[list[dict]]:
    """Every job's pair entries (a before b in the given order): diff = b - a, its paired interval,
    and for a tested job the swap-test p-value with Holm's adjustment over its pairs."""
    out: list[list[dict]] = [[] for _ in jobs]
    groups: dict[tuple, list] = {}  # (i, j, paired ids) -> the pooled jobs resting on those items
    aligned: dict[tuple[int, int], Paired] = {}  # one pairing (and one copy of its rows) per Items pair
    for i, j in combinations(range(len(labels)), 2):
        for k, (items, (stat, _, tests)) in enumerate(zip(job_items, jobs)):
            key = (id(items[i]), id(items[j]))
            if key not in aligned:
                aligned[key] = align_items(items[i], items[j])
            paired = aligned[key]
            if len(paired.a) == 0:  # no item scored by both runs: said, not hidden
                out[k].append({"a": labels[i], "b": labels[j], "n": 0, "note": "no item was scored by both runs"})
                continue
            entry = _entry(labels[i], labels[j], paired, stat)
            out[k].append(entry)
            if is_pooled(stat.compute) and not entry["unreliable"]:  # a few items: the exact test below
                groups.setdefault((i, j, paired.ids), []).append((entry, stat, paired.a, paired.b, tests))
                continue
            boot = paired_bootstrap(paired.a, paired.b, statistic=stat.compute, n_resamples=n_resamples,
                                    confidence=confidence, seed=seed)
            entry.update(low=boot.low, high=boot.high, p_greater=boot.p_greater)
            if tests:
                test = paired_swap_test(paired.a, paired.b, stat.compute, n_resamples, seed)
                entry.update(p_value=test.pvalue, exact_test=test.exact)
    for members in groups.values():
        _pooled_pairs(members, n_resamples, seed, confidence)
    for entries in out:
        for entry in entries:
            why = consistency_note(entry, confidence)
            if why is not None:
                entry["interval_vs_p"] = why
    for entries in out:
        tested = [e for e in entries if "p_value" in e]
        for entry, adjusted in zip(tested, holm([e["p_value"] for e in tested]) if tested else []):
            entry["p_holm"] = float(adjusted)
    return out


def pairwise(labels: Sequence[str], runs: list[list[dict]], statistic: Statistic, n_resamples: int, seed: int,
             confidence: float, tests: bool = True) -> list[dict]:
    """Every pair (a before b in the given order): diff = b - a, its paired interval, and with
    `tests` the swap-test p-value with Holm's adjustment over the pairs."""
    items = [read_items(run, value=ROW, status_key=NO_STATUS) for run in runs]
    return _pairs(labels, [items], [(statistic, None, tests)], n_resamples, seed, confidence)[0]


def compare_statistics(runs: Sequence[RecordRows | Sequence[Mapping]], labels: Sequence[str], jobs: Sequence[Job], *,
                       n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> list[dict]:
    """Per job (statistic, category or None, tests), the leaderboard, pairwise entries and unpaired
    ids of the runs (`RecordRows`, or record lists): what `compare_statistic` gives for each job
    alone, with every pooled statistic on the same items drawing its resamples in one pass."""
    readers = [run if isinstance(run, RecordRows) else RecordRows(run) for run in runs]
    job_items = [[reader.items(stat, only) for reader in readers] for stat, only, _ in jobs]
    unions: dict[tuple, tuple[list, list[np.ndarray]]] = {}  # one union per tuple of Items
    union_ids: dict[tuple, tuple[list, list[np.ndarray]]] = {}  # and one union of ids per tuple of id lists
    for items in job_items:
        if tuple(map(id, items)) not in unions:
            id_key = tuple(id(it.ids) for it in items)
            if id_key not in union_ids:
                union_ids[id_key] = _union_ids(items)
            unions[tuple(map(id, items))] = _union_rows(items, union_ids[id_key])
    draws: dict[int, np.ndarray] = {}
    by_ids: dict[tuple, list[int]] = {}
    for k, (items, (stat, _, _)) in enumerate(zip(job_items, jobs)):
        if is_pooled(stat.compute):
            by_ids.setdefault(tuple(unions[tuple(map(id, items))][0]), []).append(k)
    for members in by_ids.values():
        rows = [unions[tuple(map(id, job_items[k]))][1] for k in members]
        for k, drawn in zip(members, _pooled_draws(rows, [jobs[k][0].compute for k in members], n_resamples, seed)):
            draws[k] = drawn
    pairs = _pairs(labels, job_items, jobs, n_resamples, seed, confidence)
    out, unpaired = [], {}
    for k, (items, (stat, _, _)) in enumerate(zip(job_items, jobs)):
        ids, rows = unions[tuple(map(id, items))]
        key = tuple(id(it.ids) for it in items)
        if key not in unpaired:  # the categories and statistics of one row reader share their ids
            present = [set(it.ids) for it in items]
            unpaired[key] = {label: [i for i in ids if i not in have] for label, have in zip(labels, present)}
        out.append({"leaderboard": leaderboard(labels, items, rows, stat, n_resamples, seed, confidence,
                                               draws=draws.get(k)),
                    "pairwise": pairs[k], "unpaired": {label: list(found) for label, found in unpaired[key].items()}})
    return out


def compare_statistic(records: Sequence[Sequence[Mapping]], labels: Sequence[str], statistic: Statistic, *,
                      n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
                      only: str | None = None, tests: bool = True) -> dict:
    """Leaderboard, pairwise entries and unpaired ids of runs (record lists) under one statistic;
    `only` restricts it to one category of the statistic's `split`."""
    return compare_statistics(records, labels, [(statistic, only, tests)], n_resamples=n_resamples, seed=seed,
                              confidence=confidence)[0]
