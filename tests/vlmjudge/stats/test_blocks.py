"""Pooled statistics in blocks (`vlmjudge.stats.blocks`, issue 50 item 10): the block sums are the
sums of the resampled rows, and every number `compare` reports from them (intervals, rank ranges,
paired intervals, swap-test p-values) equals what the one-resample-at-a-time path gives for the same
seed, for every pooled compute the methods declare."""
from __future__ import annotations

import numpy as np
import pytest

from fager.statistics import ABAccuracy
from viescore2.statistics import MicroF1, PooledIoU
from vlmjudge.stats.blocks import BLOCK_CELLS, block_rows, draw_counts, resampled_sums, swapped_sums
from vlmjudge.stats.board import compare_statistic, compare_statistics
from vlmjudge.stats.statistic import ColumnMean, ColumnShare, Statistic


def test_block_sums_are_the_sums_of_the_drawn_rows():
    rng = np.random.default_rng(3)
    columns = rng.normal(size=(37, 4))
    sums = resampled_sums(columns, 250, np.random.default_rng(9))
    draws = np.random.default_rng(9).integers(0, 37, (250, 37))
    assert np.allclose(sums, columns[draws].sum(axis=1))
    a, b = rng.normal(size=(37, 3)), rng.normal(size=(37, 3))
    sums_a, sums_b = swapped_sums(a, b, 250, np.random.default_rng(9))
    swap = np.random.default_rng(9).integers(0, 2, (250, 37)).astype(bool)[:, :, None]
    assert np.allclose(sums_a, np.where(swap, b, a).sum(axis=1))
    assert np.allclose(sums_b, np.where(swap, a, b).sum(axis=1))


def test_a_block_stays_within_its_cells_whatever_the_resamples():
    for n in (1, 7, 100_000, 10 ** 7):
        assert block_rows(n) >= 1 and (block_rows(n) * n <= BLOCK_CELLS or block_rows(n) == 1)
    assert draw_counts(np.array([[2, 2, 0]]), 4).tolist() == [[1.0, 0.0, 2.0, 0.0]]


@pytest.mark.parametrize("compute, width", [
    (ColumnMean(1), 3), (ColumnShare(2), 3), (MicroF1(), 3), (PooledIoU(), 3), (ABAccuracy("full"), 1),
    (ABAccuracy("zero"), 1), (ABAccuracy("skip"), 1)])
def test_compute_many_matches_the_statistic_on_each_resample(compute, width):
    rng = np.random.default_rng(5)
    rows = rng.integers(-2, 4, (40, width)).astype(float)
    rows[rng.random(40) < 0.2] = np.nan  # unscored items are left out of each resample
    stat = Statistic("s", lambda r: r, compute)
    draws = rng.integers(0, 40, (30, 40))
    expected = []
    for index in draws:
        kept = rows[index][~np.isnan(rows[index]).any(axis=1)]
        expected.append(float(compute(kept)) if len(kept) else np.nan)
    assert np.allclose(stat.compute_many(rows, draws), expected, equal_nan=True)


def _plain(compute):
    """The same compute without `from_sums`: what the one-resample-at-a-time path runs."""
    return lambda x, axis=0: compute(x, axis=axis)


def _same(got: dict, want: dict) -> bool:
    """Equal keys, equal labels, numbers equal but for the last bits (sums in another order)."""
    return got.keys() == want.keys() and all(
        got[key] == want[key] if isinstance(want[key], str)
        else got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15)
        for key in want)


def _runs(seed: int = 1, n: int = 60):
    """Three runs of records with 3-count rows, some N/A, some failed, one id only two runs have."""
    rng = np.random.default_rng(seed)
    runs = []
    for m in range(3):
        records = []
        for k in range(n - (m == 2)):
            row = [float(v) for v in rng.integers(0, 5 + m, 3)]
            kind = rng.random()
            records.append({"id": f"i{k}", "row": None if kind < 0.1 else [np.nan] * 3 if kind < 0.15 else row,
                            "cat": "x" if k % 3 else "y"})
        runs.append(records)
    return runs


@pytest.mark.parametrize("compute", [ColumnMean(0), ColumnShare(1), MicroF1(), PooledIoU()])
def test_compare_gives_the_numbers_of_the_resample_at_a_time_path(compute):
    runs, labels = _runs(), ["a", "b", "c"]
    pooled = Statistic("s", lambda r: r["row"], compute, split=lambda r: r["cat"])
    plain = Statistic("s", lambda r: r["row"], _plain(compute), split=lambda r: r["cat"])
    for only in (None, "y"):
        got = compare_statistic(runs, labels, pooled, n_resamples=300, seed=4, only=only)
        want = compare_statistic(runs, labels, plain, n_resamples=300, seed=4, only=only)
        assert got["unpaired"] == want["unpaired"] == {"a": [], "b": [], "c": ["i59"]}
        for row, other in zip(got["leaderboard"], want["leaderboard"]):
            assert _same(row, other)
        for pair, other in zip(got["pairwise"], want["pairwise"]):
            assert {"low", "high", "p_value", "p_holm"} <= set(pair) and _same(pair, other)


def test_statistics_compared_together_equal_each_compared_alone():
    runs, labels = _runs(seed=2), ["a", "b", "c"]
    stats = [Statistic(f"share {k}", lambda r: r["row"], ColumnShare(k), higher_is_better=None) for k in range(3)]
    stats.append(Statistic("mean", lambda r: r["row"], ColumnMean(0), split=lambda r: r["cat"]))
    jobs = [(s, None, k == 3) for k, s in enumerate(stats)] + [(stats[3], "x", False)]
    together = compare_statistics(runs, labels, jobs, n_resamples=200, seed=7)
    alone = [compare_statistic(runs, labels, s, n_resamples=200, seed=7, only=only, tests=tests)
             for s, only, tests in jobs]
    assert together == alone


def test_rows_are_read_once_and_a_bad_row_is_one_line_naming_its_record():
    from vlmjudge.stats.statistic import RecordRows, RowReadError

    calls = []

    def rows(record):
        calls.append(record["id"])
        return record["row"]

    records = [{"id": "a", "row": [1, 2]}, {"id": "b", "row": None}, {"id": "c", "row": float("nan")},
               {"id": "d", "row": [float("nan"), 1]}, {"id": "e", "row": [3, 4]}]
    reader = RecordRows(records, [f"r.jsonl:{k}" for k in range(1, 6)])
    shares = [Statistic(f"share {k}", rows, ColumnShare(k)) for k in range(2)]
    items = [reader.items(stat) for stat in shares]
    assert items[0] is items[1] and calls == ["a", "b", "c", "d", "e"]  # one pass for both statistics
    assert items[0].kinds.tolist() == [0, 1, 2, 2, 0] and items[0].values[[0, 4]].tolist() == [[1, 2], [3, 4]]
    for bad, words in (([5], "reads 1 numbers from this record and 2 from r.jsonl:1"),
                       (["x", 1], "cannot read this record (could not convert string to float: 'x')")):
        odd = RecordRows([*records[:4], {"id": "e", "row": bad}], [f"r.jsonl:{k}" for k in range(1, 6)])
        with pytest.raises(RowReadError, match=r"^r\.jsonl:5: .*" + words.replace("(", r"\(").replace(")", r"\)")):
            odd.items(shares[0])
