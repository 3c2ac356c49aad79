"""The shared Pearson and Spearman (`vlmjudge.stats.correlation`) against scipy, ties and edges included."""
import math

import numpy as np
import pytest
from scipy import stats

from vlmjudge.stats.correlation import average_ranks, pearson, spearman


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_scipy_on_tied_data(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=40).tolist()  # few distinct values: many ties
    y = (np.array(x) + rng.integers(-2, 3, size=40)).tolist()
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)


def test_ranks_share_the_mean_position_of_a_tie():
    assert average_ranks([10, 20, 10, 30]).tolist() == [1.5, 3.0, 1.5, 4.0]
    assert average_ranks([]).tolist() == []


def test_orders_and_lines():
    assert spearman([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)  # monotone, not linear
    assert pearson([1, 2, 3, 4], [1, 8, 27, 64]) < 0.99
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


@pytest.mark.parametrize("x,y", [([], []), ([1.0], [2.0]), ([1, 2, 3], [4, 4, 4]), ([7, 7], [1, 2])])
def test_undefined_is_none(x, y):
    assert spearman(x, y) is None and pearson(x, y) is None


def test_unequal_lengths_raise():
    with pytest.raises(ValueError, match="3 values with 2"):
        spearman([1, 2, 3], [1, 2])


def test_terravis_keeps_nan_for_undefined_and_viescore2_keeps_none():
    from terravis.scoring import correlations
    from viescore2.evaluation import srcc
    assert math.isnan(correlations([0.5, 0.5, 0.5], [1, 2, 3])["spearman"])
    assert srcc([5, 5, 5], [1, 2, 3]).value is None
