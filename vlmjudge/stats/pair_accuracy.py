"""Tie-calibrated pairwise accuracy (Deutsch, Foster and Freitag 2023) on the full data and on many
bootstrap resamples at once.

A pair of items is agreed on when metric and people both tie it (metric gap within epsilon, equal
human scores) or both order it the same way; the statistic is the best share of agreed pairs over
epsilon. Items with the same (metric, human) values form one class, so the table holds pairs of
classes, sorted once by metric gap; a resample weighs a class pair by the product of how many
items of each class it drew, and pairs within a class (always tied by both) by a closed form.
Pairs whose agreement no epsilon changes are dropped, the rest are evaluated a block of resamples
over a chunk of the table at a time, in integer arithmetic: the numbers pair-by-pair counting gives.
"""
from __future__ import annotations

import numpy as np

#: Distinct (metric, human) pairs of values a table holds at most: 10,000 make 5e7 class pairs,
#: about 1.5 GB at the peak of building the table and 0.5 GB kept.
MAX_PAIRWISE_ITEMS = 10_000
_CHUNK_PAIRS = 1 << 16
_BLOCK_RESAMPLES = 16


def _class_gaps(metric: np.ndarray, human: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every pair of distinct classes (a < b, row by row): |metric gap| and d (+1 people tie it,
    -1 both order it alike, 0 neither), and where each row of pairs starts."""
    k = len(metric)
    starts = np.concatenate([[0], np.cumsum(np.arange(k - 1, 0, -1))]).astype(np.int64)
    gaps, d = np.empty(int(starts[-1])), np.zeros(int(starts[-1]), np.int8)
    for a in range(k - 1):
        span = slice(starts[a], starts[a + 1])
        gap, human_gap = metric[a] - metric[a + 1:], human[a] - human[a + 1:]
        d[span][gap * human_gap > 0] = -1
        d[span][human_gap == 0] = 1
        gaps[span] = np.abs(gap)
    return gaps, d, starts


def _sorted_table(metric: np.ndarray, human: np.ndarray):
    """The class pairs sorted by metric gap: first and second class (int32), d, and which of the
    positions 0..P is a candidate (the end of a run of equal gaps, and 0: epsilon 0 is always a
    candidate, tying the zero gaps). Built a chunk at a time, about 18 bytes a pair at the peak."""
    gaps, d, starts = _class_gaps(metric, human)
    order = np.argsort(gaps)
    count = len(gaps)
    candidate = np.ones(count + 1, dtype=bool)
    previous = None
    for start in range(0, count, _CHUNK_PAIRS):
        sorted_gaps = gaps[order[start:start + _CHUNK_PAIRS]]
        candidate[start + 1:start + len(sorted_gaps)] = sorted_gaps[1:] != sorted_gaps[:-1]
        candidate[start] = sorted_gaps[0] > 0 if previous is None else sorted_gaps[0] != previous
        previous = sorted_gaps[-1]
    candidate[0] = True
    del gaps  # before the class indices are made: one or the other is held, not both
    first, second = np.empty(count, np.int32), np.empty(count, np.int32)
    for start in range(0, count, _CHUNK_PAIRS):
        index = order[start:start + _CHUNK_PAIRS]
        row = np.searchsorted(starts, index, side="right") - 1
        first[start:start + len(index)], second[start:start + len(index)] = row, row + 1 + (index - starts[row])
    return first, second, d[order], candidate


class PairTable:
    """The class-pair table of one metric against people, for the accuracy on the full data
    (`accuracy`) and on resamples (`accuracies`)."""

    def __init__(self, metric: np.ndarray, human: np.ndarray):
        values, self.item_class = np.unique(np.stack([metric, human], axis=1), axis=0, return_inverse=True)
        self.item_class = self.item_class.reshape(-1)
        self.n, k = len(metric), len(values)
        if k > MAX_PAIRWISE_ITEMS:
            raise ValueError(f"pairwise accuracy over {k} distinct (judge, human) scores means {k * (k - 1) // 2} "
                             f"pairs in memory; above {MAX_PAIRWISE_ITEMS} score a random subset, or compare "
                             "within groups one group at a time")
        _, self.human_level = np.unique(values[:, 1], return_inverse=True)
        self.class_metric = values[:, 0]
        first, second, d, candidate = _sorted_table(values[:, 0], values[:, 1])
        sizes = np.bincount(self.item_class, minlength=k)
        self._full = self._full_accuracy(sizes, first, second, d, candidate)
        kept = d != 0  # pairs no epsilon turns from agreed to not (or back) only move the total
        self.reachable = np.zeros(int(kept.sum()) + 1, dtype=bool)
        kept_at, kept_before = np.append(kept, False), 0  # one entry per position 0..P
        for start in range(0, len(kept_at), _CHUNK_PAIRS):  # a candidate reaches the kept pairs before it
            here = kept_at[start:start + _CHUNK_PAIRS]
            before = kept_before + np.cumsum(here) - here
            self.reachable[before[candidate[start:start + len(here)]]] = True
            kept_before += int(here.sum())
        self.first, self.second, self.d = first[kept], second[kept], d[kept]

    def _full_accuracy(self, sizes, first, second, d, candidate) -> tuple[float, float] | None:
        """(accuracy, smallest epsilon reaching it) on the full data, a chunk of the table at a
        time; None with fewer than 2 items."""
        total = self.n * (self.n - 1) // 2
        if total == 0:
            return None
        best = 0 if candidate[0] else None
        best_at, carry = 0, 0
        for start in range(0, len(d), _CHUNK_PAIRS):
            stop = min(start + _CHUNK_PAIRS, len(d))
            weight = sizes[first[start:stop]].astype(np.int64) * sizes[second[start:stop]]
            prefix = carry + np.cumsum(weight * d[start:stop])
            at = np.flatnonzero(candidate[start + 1:stop + 1])
            if len(at):
                top = int(np.argmax(prefix[at]))
                if best is None or prefix[at[top]] > best:
                    best, best_at = int(prefix[at[top]]), start + 1 + int(at[top])
            carry = int(prefix[-1])
        base = int(self._order_total(sizes[None], carry)[0]) + int((sizes * (sizes - 1) // 2).sum())
        pair = (first[best_at - 1], second[best_at - 1]) if best_at else None
        epsilon = abs(float(self.class_metric[pair[0]] - self.class_metric[pair[1]])) if pair else 0.0
        return float((best + base) / total), epsilon

    def _order_total(self, class_counts: np.ndarray, d_total: np.ndarray | int) -> np.ndarray:
        """Weighted pairs of distinct classes that both order alike (what no epsilon ties): the
        pairs people tie, from per-level sums, less the summed d of the table."""
        totals = np.zeros((len(class_counts), int(self.human_level.max()) + 1))
        for b, counts in enumerate(class_counts):
            totals[b] = np.bincount(self.human_level, weights=counts, minlength=totals.shape[1])
        squares = np.stack([np.bincount(self.human_level, weights=c.astype(float) ** 2, minlength=totals.shape[1])
                            for c in class_counts])
        tied = np.rint(((totals ** 2 - squares) / 2).sum(axis=1)).astype(np.int64)
        return tied - d_total

    def accuracy(self) -> tuple[float, float] | None:
        """(best accuracy, smallest epsilon reaching it) on the full data; None with under 2 items."""
        return self._full

    def accuracies(self, counts: np.ndarray) -> np.ndarray:
        """The best accuracy on each resample, `counts[b, i]` how often resample b drew item i (an
        item never pairs with its own copy); NaN where no pair carries weight."""
        counts = np.asarray(counts, dtype=np.int64)
        out = np.empty(len(counts))
        for start in range(0, len(counts), _BLOCK_RESAMPLES):
            out[start:start + _BLOCK_RESAMPLES] = self._block(counts[start:start + _BLOCK_RESAMPLES])
        return out

    def _block(self, counts: np.ndarray) -> np.ndarray:
        """`accuracies` of up to a block of resamples: one pass over the table in chunks."""
        k = len(self.human_level)
        drawn = np.stack([np.bincount(self.item_class, weights=c, minlength=k) for c in counts])
        squares = np.stack([np.bincount(self.item_class, weights=c.astype(float) ** 2, minlength=k) for c in counts])
        within = np.rint(((drawn ** 2 - squares) / 2).sum(axis=1)).astype(np.int64)  # pairs inside classes
        n_drawn = counts.sum(axis=1)  # n, or another number when whole groups are drawn
        dtype = np.int32 if n_drawn.max() <= 46_340 else np.int64  # every weighted sum stays below n^2 / 2
        drawn = np.rint(drawn).astype(dtype)
        carry = np.zeros(len(counts), dtype=dtype)
        best = np.full(len(counts), 0 if self.reachable[0] else np.iinfo(dtype).min, dtype=dtype)
        for start in range(0, len(self.d), _CHUNK_PAIRS):
            stop = min(start + _CHUNK_PAIRS, len(self.d))
            weight = np.take(drawn, self.first[start:stop], axis=1)
            weight *= np.take(drawn, self.second[start:stop], axis=1)
            weight *= self.d[start:stop]
            prefix = np.cumsum(weight, axis=1, dtype=dtype)
            prefix += carry[:, None]
            reach = self.reachable[start + 1:stop + 1]
            if reach.all():
                np.maximum(best, prefix.max(axis=1), out=best)
            elif reach.any():
                np.maximum(best, prefix[:, reach].max(axis=1), out=best)
            carry = prefix[:, -1].copy()
        total = (n_drawn ** 2 - (counts ** 2).sum(axis=1)) // 2
        agreed = best.astype(np.int64) + self._order_total(drawn, carry.astype(np.int64)) + within
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, agreed / np.maximum(total, 1), np.nan)
