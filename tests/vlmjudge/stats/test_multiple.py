"""holm and benjamini_hochberg: hand cases, definitional reference loops, scipy's BH."""
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

from vlmjudge.stats.multiple import benjamini_hochberg, holm


def test_holm_hand_case():
    # sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1 = 0.04, 0.09, 0.08, 0.5;
    # running maximum 0.04, 0.09, 0.09, 0.5, mapped back to the input order.
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    # 0.6 * 2 = 1.2 caps at 1, and the larger p inherits the running maximum
    assert holm([0.7, 0.6]).tolist() == [1.0, 1.0]


def test_bh_hand_case():
    # sorted 0.01, 0.03, 0.04, 0.5 times 4/1, 4/2, 4/3, 4/4 = 0.04, 0.06, 0.0533, 0.5;
    # minimum from the top down: 0.04, 0.0533, 0.0533, 0.5.
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])


def test_empty_and_invalid():
    assert holm([]).shape == (0,) and benjamini_hochberg([]).shape == (0,)
    for bad in ([0.1, float("nan")], [1.2], [-0.1], [[0.1]]):
        with pytest.raises(ValueError):
            holm(bad)
        with pytest.raises(ValueError):
            benjamini_hochberg(bad)


def holm_reference(p):
    """Definition: adj(i) = max over p_j <= p_i (in sorted order) of min(1, (m - rank_j) p_j)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    out = [0.0] * m
    for pos, i in enumerate(order):
        out[i] = min(1.0, max((m - k) * p[order[k]] for k in range(pos + 1)))
    return out


def bh_reference(p):
    """Definition: adj(i) = min over ranks k >= rank_i of min(1, m p_(k) / k)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    out = [0.0] * m
    for pos, i in enumerate(order):
        out[i] = min(1.0, min(m * p[order[k]] / (k + 1) for k in range(pos, m)))
    return out


pvalues = st.lists(st.floats(0, 1), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(pvalues)
def test_against_reference_formulas(p):
    assert holm(p) == pytest.approx(holm_reference(p), abs=1e-12)
    assert benjamini_hochberg(p) == pytest.approx(bh_reference(p), abs=1e-12)
    assert benjamini_hochberg(p) == pytest.approx(scipy.stats.false_discovery_control(p), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(pvalues)
def test_monotone_bounded_and_ordered(p):
    arr = np.array(p)
    order = np.argsort(arr, kind="stable")
    for adjusted in (holm(p), benjamini_hochberg(p)):
        assert np.all(adjusted >= arr - 1e-15) and np.all(adjusted <= 1)
        assert np.all(np.diff(adjusted[order]) >= -1e-15)
    assert np.all(holm(p) >= benjamini_hochberg(p) - 1e-15)
