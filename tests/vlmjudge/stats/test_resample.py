"""The resampling engine: axis detection, cluster resamples, jackknife and the BCa correction."""
import numpy as np
import pytest

from vlmjudge.stats.resample import accepts_axis, bca_interval, bootstrap_distribution, jackknife, percentile_interval


def test_accepts_axis():
    assert accepts_axis(np.mean) and accepts_axis(lambda x, axis=0: x)
    assert not accepts_axis(lambda x: x) and not accepts_axis(len)


def test_equal_clusters_resample_whole_clusters():
    # two clusters of constant values 0 and 10: every resampled mean is 0, 5 or 10
    x = np.array([0.0, 0.0, 10.0, 10.0])
    draws = bootstrap_distribution((x,), np.mean, 500, np.random.default_rng(0), clusters=np.array([0, 0, 1, 1]))
    assert set(np.unique(draws)) <= {0.0, 5.0, 10.0}


def test_jackknife_hand_case():
    # leave-one-out means of [1, 2, 6]: (2+6)/2, (1+6)/2, (1+2)/2
    x = np.array([1.0, 2.0, 6.0])
    assert jackknife((x,), np.mean)[:, 0].tolist() == [4.0, 3.5, 1.5]
    assert jackknife((x,), np.median)[:, 0].tolist() == [4.0, 3.5, 1.5]
    # by cluster {0: [1, 2], 1: [6]}: leaving out cluster 0 leaves 6, cluster 1 leaves 1.5
    assert jackknife((x,), np.mean, clusters=np.array(["u", "u", "v"]))[:, 0].tolist() == [6.0, 1.5]
    with pytest.raises(ValueError):
        jackknife((x,), np.mean, clusters=np.array(["u", "u", "u"]))


def test_bca_without_bias_or_skew_is_the_percentile_interval():
    # draws symmetric about the estimate (z0 = 0) and a symmetric jackknife (acceleration 0)
    draws = np.linspace(-1, 1, 2001)
    jack = np.array([-1.0, 0.0, 1.0])
    assert bca_interval(draws, 0.0, jack, 0.9) == pytest.approx(percentile_interval(draws, 0.9))
    # every draw above the estimate: the bias correction moves both levels down to the lowest
    # draws (toward the estimate), finite rather than NaN
    low, high = bca_interval(draws + 5, 0.0, jack, 0.9)
    assert low == 4.0 and 4.0 <= high < 4.01
