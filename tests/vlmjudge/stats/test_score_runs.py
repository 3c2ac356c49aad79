"""compare: pairing by id, unpaired ids, leaderboard ranks and rank ranges, pairwise entries
consistent with paired_bootstrap / paired_permutation_test, Holm across pairs."""
import numpy as np
import pytest

from vlmjudge.stats.multiple import holm
from vlmjudge.stats.paired import paired_bootstrap
from vlmjudge.stats.permutation import paired_permutation_test
from vlmjudge.stats.score_runs import compare


def records(scores, **extra):
    return [{"id": i, "score": s, **extra} for i, s in enumerate(scores)]


def test_hand_case_two_runs():
    # a = [0, 1, 2, N/A] on ids 0-3; b = [1, 2, failed, 9] on ids 0-3 plus 5.0 on id 4 (a lacks it).
    # Both scored ids 0 and 1 only: diff = mean(1, 2) - mean(0, 1) = 1; ids 2 and 3 are one-sided.
    # a's own mean over its scored 0, 1, 2 is 1.
    a = records([0.0, 1.0, 2.0, None])
    b = records([1.0, 2.0, 3.0, 9.0])
    b[2]["status"] = "failed"
    b.append({"id": 4, "score": 5.0})
    out = compare([a, b], labels=["a", "b"], n_resamples=200)
    pair = out["pairwise"][0]
    assert (pair["a"], pair["b"], pair["n"], pair["diff"]) == ("a", "b", 2, 1.0)
    assert pair["n_one_sided"] == 2 and pair["n_unpaired"] == 1
    assert out["unpaired"] == {"a": [4], "b": []}
    board = {row["label"]: row for row in out["leaderboard"]}
    assert board["a"]["mean"] == 1.0 and (board["a"]["n"], board["a"]["n_na"]) == (3, 1)
    # b's scored items are ids 0, 1, 3, 4: (1 + 2 + 9 + 5) / 4
    assert board["b"]["mean"] == 4.25 and (board["b"]["n"], board["b"]["n_failed"]) == (4, 1)
    assert [row["label"] for row in out["leaderboard"]] == ["b", "a"]


def simulated(shifts, n=120, seed=0):
    rng = np.random.default_rng(seed)
    # items of one prompt (4 images each) share most of their difficulty
    base = rng.normal(size=n // 4)[np.arange(n) // 4] + 0.2 * rng.normal(size=n)
    return {name: [{"id": f"img{i}", "score": float(base[i] + shift + 0.3 * rng.normal()), "prompt": i // 4}
                   for i in range(n)] for name, shift in shifts.items()}


def test_leaderboard_ranks_and_rank_ranges():
    runs = simulated({"weak": 0.0, "close_a": 0.5, "close_b": 0.51, "strong": 1.5})
    out = compare(runs, n_resamples=500)
    board = {row["label"]: row for row in out["leaderboard"]}
    assert [row["rank"] for row in out["leaderboard"]] == [1, 2, 3, 4]
    assert (board["strong"]["rank_low"], board["strong"]["rank_high"]) == (1, 1)
    assert (board["weak"]["rank_low"], board["weak"]["rank_high"]) == (4, 4)
    # two runs 0.01 apart could swap places: their rank ranges both cover 2 and 3
    for name in ("close_a", "close_b"):
        assert board[name]["rank_low"] == 2 and board[name]["rank_high"] == 3
        assert board[name]["low"] < board[name]["mean"] < board[name]["high"]
    reverse = compare(runs, n_resamples=500, higher_is_better=False)
    assert reverse["leaderboard"][0]["label"] == "weak"


def test_pairwise_entries_agree_with_the_building_blocks():
    runs = simulated({"x": 0.0, "y": 0.1, "z": 0.3}, seed=1)
    out = compare(runs, n_resamples=400, seed=3)
    assert [(p["a"], p["b"]) for p in out["pairwise"]] == [("x", "y"), ("x", "z"), ("y", "z")]
    first = out["pairwise"][0]
    boot = paired_bootstrap(runs["x"], runs["y"], n_resamples=400, seed=3)
    test = paired_permutation_test(runs["x"], runs["y"], n_resamples=400, seed=3)
    assert (first["diff"], first["low"], first["high"], first["p_value"]) == (boot.diff, boot.low, boot.high, test.pvalue)
    assert [p["p_holm"] for p in out["pairwise"]] == pytest.approx(holm([p["p_value"] for p in out["pairwise"]]))


def test_clusters_widen_intervals_and_custom_statistic():
    runs = simulated({"x": 0.0, "y": 0.2}, seed=2)
    naive = compare(runs, n_resamples=400)
    clustered = compare(runs, n_resamples=400, cluster="prompt")
    width = [{r["label"]: r["high"] - r["low"] for r in out["leaderboard"]} for out in (naive, clustered)]
    assert clustered["leaderboard"][0]["mean"] == naive["leaderboard"][0]["mean"]
    assert all(width[1][k] > width[0][k] for k in width[0])
    med = compare(runs, n_resamples=100, statistic=np.median)
    row = {r["label"]: r for r in med["leaderboard"]}["x"]
    assert row["value"] == np.median([r["score"] for r in runs["x"]]) and "mean" not in row


def test_refuses_mismatched_labels():
    with pytest.raises(ValueError):
        compare([records([1.0]), records([2.0])], labels=["only_one"])
