"""paired_permutation_test: a hand case, full enumeration, and scipy's permutation_test."""
import itertools

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

from vlmjudge.stats.permutation import paired_permutation_test


def test_two_items_hand_case():
    # d = [1, 2]; the four sign patterns give means 1.5, 0.5, -0.5, -1.5.
    # greater: only 1.5 >= 1.5 -> 1/4; less: all four <= 1.5 -> 1; two-sided: 2 * 1/4 = 1/2.
    a, b = [0.0, 0.0], [1.0, 2.0]
    assert paired_permutation_test(a, b, alternative="greater").pvalue == 0.25
    assert paired_permutation_test(a, b, alternative="less").pvalue == 1.0
    r = paired_permutation_test(a, b)
    assert (r.pvalue, r.statistic, r.n, r.exact, r.n_resamples) == (0.5, 1.5, 2, True, 4)


def enumerate_p(d, alternative):
    """Reference: loop over every sign pattern, as the definition reads."""
    observed = np.mean(d)
    null = [np.mean(np.array(signs) * d) for signs in itertools.product((1, -1), repeat=len(d))]
    greater = np.mean([t >= observed - 1e-12 for t in null])
    less = np.mean([t <= observed + 1e-12 for t in null])
    return {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))}[alternative]


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_small_n_is_exact_full_enumeration(alternative):
    rng = np.random.default_rng(1)
    a = rng.normal(size=9)
    b = a + 0.4 + rng.normal(size=9)
    r = paired_permutation_test(a, b, alternative=alternative)
    assert r.exact and r.n_resamples == 2 ** 9
    assert r.pvalue == pytest.approx(enumerate_p(b - a, alternative), abs=1e-12)


def diff_of_means(x, y, axis=-1):
    return np.mean(y, axis=axis) - np.mean(x, axis=axis)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_matches_scipy_exact(alternative):
    rng = np.random.default_rng(2)
    a = rng.normal(size=11)
    b = a + 0.5 + rng.normal(size=11)
    ref = scipy.stats.permutation_test((a, b), diff_of_means, permutation_type="samples",
                                       alternative=alternative, n_resamples=10_000)
    assert paired_permutation_test(a, b, alternative=alternative).pvalue == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_matches_scipy_sampled(alternative):
    rng = np.random.default_rng(3)
    a = rng.normal(size=40)
    b = a + 0.3 + rng.normal(size=40)
    r = paired_permutation_test(a, b, alternative=alternative, n_resamples=2000)
    ref = scipy.stats.permutation_test((a, b), diff_of_means, permutation_type="samples",
                                       alternative=alternative, n_resamples=20_000, rng=0)
    assert not r.exact and r.n_resamples == 2000
    # binomial standard error of a p near 0.1 from 2,000 draws is under 0.007
    assert r.pvalue == pytest.approx(ref.pvalue, abs=0.03)


def test_custom_statistic_with_and_without_axis():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=14), rng.normal(size=14) + 1
    vectorised = paired_permutation_test(a, b, statistic=np.median)
    looped = paired_permutation_test(a, b, statistic=lambda d: float(np.median(d)))
    assert vectorised.pvalue == looped.pvalue and vectorised.statistic == np.median(b - a)


def test_missing_items_are_left_out_and_bad_arguments_refused():
    r = paired_permutation_test([1.0, None, 2.0, float("nan")], [2.0, 5.0, 4.0, 1.0], alternative="greater")
    # pairs left: d = [1, 2] -> the hand case above
    assert (r.n, r.pvalue) == (2, 0.25)
    with pytest.raises(ValueError):
        paired_permutation_test([1.0], [2.0], alternative="bigger")
    with pytest.raises(ValueError):
        paired_permutation_test([None], [2.0])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=40))
def test_identical_runs_give_p_one(x):
    assert paired_permutation_test(x, list(x), n_resamples=300).pvalue == 1.0
