"""bradley_terry: closed-form hand cases, ties, the prior, and recovery of simulated strengths."""
import math

import numpy as np
import pytest

from vlmjudge.stats.preferences import bradley_terry


def test_two_players_hand_case():
    # A beat B 3 times of 4: the fit has p_A / p_B = 3, so log-strengths +-ln(3)/2, P(A > B) = 3/4.
    r = bradley_terry([("A", "B")] * 3 + [("B", "A")], prior=0, n_resamples=200)
    assert r["A"].strength == pytest.approx(math.log(3) / 2) and r["B"].strength == pytest.approx(-math.log(3) / 2)
    assert r.win_probability("A", "B") == pytest.approx(0.75)
    assert [p.player for p in r.players] == ["A", "B"] and (r["A"].rank, r["B"].rank) == (1, 2)
    assert (r["A"].wins, r["A"].games) == (3.0, 4)
    # resamples where one side never lost have no finite fit: left out of the bounds, counted
    assert 0 < r.n_degenerate < 200 and r["A"].low <= r["A"].strength <= r["A"].high


def test_ties_are_half_wins():
    # two ties and one A win: A scores 2, B scores 1 -> ratio 2 -> +-ln(2)/2; "tie" and 0.5 agree
    words = bradley_terry([("A", "B", "tie"), ("A", "B", "tie"), ("A", "B")], prior=0, n_resamples=20)
    numbers = bradley_terry([("A", "B", 0.5), ("B", "A", 0.5), ("B", "A", 0.0)], prior=0, n_resamples=20)
    assert words["A"].strength == pytest.approx(math.log(2) / 2)
    assert numbers["A"].strength == pytest.approx(math.log(2) / 2)


def test_prior_keeps_unbeaten_players_finite_and_shrinks():
    comps = [("A", "B"), ("A", "B"), ("B", "C"), ("A", "C")]
    with pytest.raises(ValueError):
        bradley_terry(comps, prior=0)
    r = bradley_terry(comps, n_resamples=200)
    assert r.n_degenerate == 0 and [p.player for p in r.players] == ["A", "B", "C"]
    assert all(np.isfinite([p.low, p.strength, p.high]).all() for p in r.players)
    mild = bradley_terry([("A", "B")] * 3 + [("B", "A")], n_resamples=10)
    assert 0 < mild["A"].strength < math.log(3) / 2


def test_bad_comparisons_are_refused():
    for bad in ([("A", "A")], [("A", "B", 2)], [("A",)], []):
        with pytest.raises(ValueError):
            bradley_terry(bad)


def test_recovers_the_order_of_known_strengths():
    rng = np.random.default_rng(0)
    truth = np.array([1.2, 0.6, 0.1, -0.4, -1.5])
    comps = []
    for _ in range(4000):
        i, j = rng.choice(len(truth), 2, replace=False)
        i_wins = rng.random() < 1 / (1 + math.exp(truth[j] - truth[i]))
        comps.append((f"m{i}", f"m{j}") if i_wins else (f"m{j}", f"m{i}"))
    r = bradley_terry(comps, n_resamples=300, seed=1)
    assert [p.player for p in r.players] == [f"m{k}" for k in range(len(truth))]
    assert [p.rank for p in r.players] == [1, 2, 3, 4, 5]
    fitted = np.array([r[f"m{k}"].strength for k in range(len(truth))])
    assert np.abs(fitted - (truth - truth.mean())).max() < 0.15
    assert all(p.low < p.strength < p.high for p in r.players)
    assert sum(p.low <= t <= p.high for p, t in zip(r.players, truth - truth.mean())) >= 4
