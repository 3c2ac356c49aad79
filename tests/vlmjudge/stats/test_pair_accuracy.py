"""Tie-calibrated pairwise accuracy over class pairs, a block of resamples at a time
(`vlmjudge.stats.pair_accuracy`, issue 50 item 10): on the full data and on weighted resamples
(items drawn several times, whole groups of another size) it gives what counting every pair of
drawn items one by one gives, whatever the chunk and block sizes."""
from __future__ import annotations

import numpy as np
import pytest

from vlmjudge.stats import pair_accuracy
from vlmjudge.stats.pair_accuracy import PairTable


def naive(metric, human, counts=None):
    """(best accuracy, smallest epsilon) by counting every pair of distinct drawn items at every
    candidate epsilon; None when no pair carries weight."""
    n = len(metric)
    counts = np.ones(n, dtype=int) if counts is None else counts
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    total = sum(counts[i] * counts[j] for i, j in pairs)
    if total == 0:
        return None
    best = None
    for epsilon in sorted({0.0, *(abs(metric[i] - metric[j]) for i, j in pairs)}):
        agreed = 0
        for i, j in pairs:
            gap, human_gap = metric[i] - metric[j], human[i] - human[j]
            tied, same_order = abs(gap) <= epsilon, abs(gap) > epsilon and gap * human_gap > 0
            agreed += counts[i] * counts[j] * ((tied and human_gap == 0) or same_order)
        if best is None or agreed > best[0]:
            best = (agreed, epsilon)
    return best[0] / total, best[1]


@pytest.mark.parametrize("chunk, block", [(1 << 16, 16), (3, 4), (1, 1)])
@pytest.mark.parametrize("seed", range(4))
def test_matches_counting_every_pair_of_drawn_items(seed, chunk, block, monkeypatch):
    monkeypatch.setattr(pair_accuracy, "_CHUNK_PAIRS", chunk)
    monkeypatch.setattr(pair_accuracy, "_BLOCK_RESAMPLES", block)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 13))
    metric = np.round(rng.normal(size=n), int(rng.integers(0, 2)))  # ties in the metric, some rounds
    human = rng.integers(1, 4, n).astype(float)
    table = PairTable(metric, human)
    assert table.accuracy() == naive(metric, human)
    counts = np.stack([np.bincount(rng.integers(0, n, int(rng.integers(1, 2 * n))), minlength=n) for _ in range(9)])
    want = [naive(metric, human, c) for c in counts]
    got = table.accuracies(counts)
    assert [None if np.isnan(g) else g for g in got] == [None if w is None else w[0] for w in want]


def test_repeated_pairs_of_values_share_a_class():
    # 120 items, 6 distinct (metric, human) pairs: the table holds at most 15 class pairs, not 7,140
    rng = np.random.default_rng(0)
    values = [(0.1, 1.0), (0.1, 2.0), (0.4, 2.0), (0.7, 3.0), (0.9, 3.0), (0.9, 4.0)]
    picks = rng.integers(0, len(values), 120)
    metric, human = np.array([values[k][0] for k in picks]), np.array([values[k][1] for k in picks])
    table = PairTable(metric, human)
    assert len(table.d) <= 15 and table.accuracy() == naive(metric, human)
    counts = np.bincount(rng.integers(0, 120, 120), minlength=120)
    assert table.accuracies(counts[None])[0] == naive(metric, human, counts)[0]
