"""read_items and align: kinds of items, statuses, clusters and the counts of what was left out."""
import numpy as np
import pytest

from vlmjudge.stats.pairing import FAILED, NA, OK, align, read_items


def test_rows_with_any_nan_fail_and_none_is_na():
    items = read_items([[1.0, 2.0], [np.nan, 1.0], None])
    assert items.kinds.tolist() == [OK, FAILED, NA]
    assert items.values.shape == (3, 2) and items.values[0].tolist() == [1.0, 2.0]


def test_statuses_override_values_and_clusters_read_from_records():
    recs = [{"id": "a", "score": 1, "status": "ok", "img": 0}, {"id": "b", "score": 2, "status": "error", "img": 0},
            {"id": "c", "score": 3, "status": "not_applicable", "img": 1}]
    items = read_items(recs, cluster="img")
    assert items.kinds.tolist() == [OK, FAILED, NA] and items.clusters.tolist() == [0, 0, 1]
    assert read_items(recs, cluster=lambda r: r["id"].upper()).clusters.tolist() == ["A", "B", "C"]
    with pytest.raises(ValueError):
        read_items([1.0, 2.0], cluster=[0])


def test_align_keeps_a_order_and_a_clusters():
    a = [{"id": i, "score": float(i), "p": i // 2} for i in range(4)]
    b = [{"id": i, "score": 10.0 + i} for i in (3, 2, 1)]
    paired = align(a, b, cluster="p")
    assert paired.ids == (1, 2, 3) and paired.b.tolist() == [11.0, 12.0, 13.0]
    assert paired.clusters.tolist() == [0, 1, 1]
    assert (paired.missing.n_unpaired, paired.missing.n_items, paired.missing.n_one_sided) == (1, 4, 0)
