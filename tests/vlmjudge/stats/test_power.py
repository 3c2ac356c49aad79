"""minimum_detectable_effect and required_n: hand values and their inverse relation."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from vlmjudge.stats.power import minimum_detectable_effect, required_n

Z_975, Z_95, Z_80 = 1.959963985, 1.644853627, 0.841621234


def test_hand_values():
    # values 0 and 2: sd (ddof 1) = sqrt(2); at n = 100, MDE = (z_.975 + z_.8) * sqrt(2) / 10
    assert minimum_detectable_effect([0.0, 2.0], n=100) == pytest.approx((Z_975 + Z_80) * math.sqrt(2) / 10)
    # unpaired: the other run adds the same variance -> times sqrt(2)
    assert minimum_detectable_effect([0.0, 2.0], n=100, paired=False) == pytest.approx((Z_975 + Z_80) * 2 / 10)
    # one-sided uses z_.95; n defaults to the number of values (None and NaN dropped)
    assert minimum_detectable_effect([0.0, None, 2.0, float("nan")], alternative="one-sided") == \
        pytest.approx((Z_95 + Z_80) * math.sqrt(2) / math.sqrt(2))
    # required_n: (2.8016 / 0.28)^2 = 100.11 -> 101 items; unpaired doubles the exact count
    assert required_n(0.28, 1.0) == 101
    assert required_n(0.28, 1.0, paired=False) == math.ceil(2 * ((Z_975 + Z_80) / 0.28) ** 2)


def test_refusals():
    with pytest.raises(ValueError):
        minimum_detectable_effect([1.0])
    with pytest.raises(ValueError):
        minimum_detectable_effect([1.0, 2.0], alpha=1.5)
    with pytest.raises(ValueError):
        required_n(0.0, 1.0)


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 5000), st.floats(0.01, 10), st.booleans())
def test_required_n_inverts_the_mde(n, sd, paired):
    effect = minimum_detectable_effect([0.0, sd * math.sqrt(2)], n=n, paired=paired)
    assert required_n(effect, sd, paired=paired) == n
