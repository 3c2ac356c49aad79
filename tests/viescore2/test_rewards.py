"""GRPO rewards: coverage-weighted F-beta/Dice, score, format and total, and the TRL calling convention."""
import pytest
from hypothesis import given, settings, strategies as st

from viescore2.grid import Grid
from viescore2.scoring import (
    REWARD_WEIGHTS, dice_reward, fbeta_reward, score_reward, supervised_keys, weighted_counts,
)
from viescore2.rewards import RewardFunction, Target, completion_text, reward_functions, rewards

TARGET = Grid({(1, 1), (1, 2), (1, 3), (2, 1)}, {(1, 1), (1, 2)})
PRED = Grid({(1, 1), (1, 3), (3, 3), (3, 4)})


def test_weighted_case_with_marks_by_hand():
    # TP_w = w(1,1) + w(1,3) = 2 + 1; FN_w = w(1,2) + w(2,1) = 2 + 1; FP = |{(3,3), (3,4)}| = 2
    assert weighted_counts(PRED, TARGET) == (3.0, 2.0, 3.0)
    assert dice_reward(PRED, TARGET) == pytest.approx(6 / 11)          # 2*3 / (2*3 + 2 + 3)
    # P = 3/5, R = 3/6
    assert fbeta_reward(PRED, TARGET, beta=2) == pytest.approx(15 / 29)   # 5 P R / (4 P + R)
    assert fbeta_reward(PRED, TARGET, beta=0.5) == pytest.approx(15 / 26)  # 1.25 P R / (0.25 P + R)


def test_edge_cases():
    empty = Grid()
    assert dice_reward(empty, empty) == 1.0                      # both empty
    assert dice_reward(None, TARGET) == 0.0                      # unparseable
    assert dice_reward(None, empty) == 0.0                       # unparseable, even on a clean image
    assert dice_reward(Grid({(9, 9)}), TARGET) == 0.0            # TP = 0
    assert dice_reward(empty, TARGET) == 0.0
    assert dice_reward(Grid({(9, 9)}), empty) == 0.0
    assert dice_reward(TARGET, TARGET) == 1.0


@st.composite
def grid_pairs(draw):
    cell = st.tuples(st.integers(1, 6), st.integers(1, 6))
    truth = draw(st.sets(cell, max_size=20))
    marks = draw(st.sets(st.sampled_from(sorted(truth)), max_size=len(truth))) if truth else set()
    return Grid(draw(st.sets(cell, max_size=20)), n=16), Grid(truth, marks)


@settings(max_examples=150, deadline=None)
@given(grid_pairs())
def test_beta_one_equals_weighted_dice(pair):
    pred, truth = pair
    w = {c: 2.0 if c in truth.marks else 1.0 for c in truth.cells}
    tp = sum(w[c] for c in truth.cells & pred.cells)
    fn = sum(w[c] for c in truth.cells - pred.cells)
    fp = len(pred.cells - truth.cells)
    if pred.is_empty and truth.is_empty:
        expected = 1.0
    elif tp == 0:
        expected = 0.0
    else:
        expected = 2 * tp / (2 * tp + fp + fn)
    assert fbeta_reward(pred, truth, beta=1.0) == pytest.approx(expected)


def test_score_reward():
    assert score_reward({"score": 7.5}, {"score": 5}) == pytest.approx(0.75)
    assert score_reward({"pq": 7, "sc": 2}, {"pq": 6, "sc": 8}) == pytest.approx((0.9 + 0.4) / 2)
    assert score_reward({"pq": 7}, {"pq": 6, "sc": 8}) == pytest.approx(0.45)  # missing SC earns 0
    assert score_reward({}, {"score": 5}) == 0.0


def test_totals_by_hand():
    assert dict(REWARD_WEIGHTS) == {"dice": 1.0, "score": 0.3, "format": 0.1}
    target = Target.from_text("pq: 6/10\nsc: 8/10\nr1: 1!,2!,3\nr2: 1")
    r = rewards("pq: 7/10\nsc: 8/10\nr1: 1,3\nr3: 3,4", target)
    assert r["dice"] == pytest.approx(6 / 11) and r["score"] == pytest.approx(0.95) and r["format"] == 1.0
    assert r["total"] == pytest.approx(6 / 11 + 0.3 * 0.95 + 0.1)


def test_terms_without_supervision_are_zero():
    score_only = Target.from_text("score: 5/10")
    assert not score_only.has_grid
    # a perfect grid earns nothing: there is no grid to compare with
    assert rewards("score: 7.5/10\nr1: 1", score_only) == pytest.approx(
        {"dice": 0.0, "score": 0.75, "format": 1.0, "total": 0.3 * 0.75 + 0.1})
    # score-only: the format reward needs a parsed score, a missing score earns 0
    assert rewards("r1: 1", score_only) == {"dice": 0.0, "score": 0.0, "format": 0.0, "total": 0.0}
    grid_only = Target.from_text("none")
    assert grid_only.has_grid and not grid_only.has_scores
    assert rewards("score: 9/10\nnone", grid_only) == pytest.approx({"dice": 1.0, "score": 0.0, "format": 1.0,
                                                                     "total": 1.1})
    assert rewards("it looks clean", grid_only) == {"dice": 0.0, "score": 0.0, "format": 0.0, "total": 0.0}


def test_split_targets_reward_the_union():
    target = Target.from_text("artifact:\nr1: 1!\nmisalign:\nr2: 2")
    assert target.grid == Grid({(1, 1), (2, 2)}, {(1, 1)})
    # a category swap is not penalised by the Dice term
    assert rewards("artifact:\nr2: 2\nmisalign:\nr1: 1", target)["dice"] == 1.0
    # one category section only: the union grid is still read, as the release reads it
    assert rewards("artifact:\nr1: 1", target)["format"] == 1.0
    assert rewards("artifact:\nr1: 1", target)["dice"] == pytest.approx(4 / 5)  # TP_w 2, FN_w 1: 2*2 / (2*2 + 0 + 1)


def test_out_of_range_rows_earn_nothing_against_a_clean_target():
    """Issue 18: ``r17: 1`` used to parse as a clean grid (Dice 1, format 1, total 1.1)."""
    clean = Target.from_text("none")
    for text in ("r17: 1", "r0: 1", "r5: 0"):
        assert rewards(text, clean) == {"dice": 0.0, "score": 0.0, "format": 0.0, "total": 0.0}
    scored_clean = Target.from_text("score: 8/10\nnone")
    assert rewards("r17: 1", scored_clean) == {"dice": 0.0, "score": 0.0, "format": 0.0, "total": 0.0}


def test_targets_are_read_tolerantly_and_strict_mode_stays_available():
    assert Target.from_text("r1: 1\nsomething else").grid == Grid({(1, 1)})
    with pytest.raises(ValueError):
        Target.from_text("r1: 1\nsomething else", strict=True)
    for corrupt in ("artifact:\ngarbage", "cells: broken", "score: 5/10\nmisalign: oops"):
        with pytest.raises(ValueError):
            Target.from_text(corrupt)  # a grid section that cannot be read is corrupt data
    for unsupervised in ("", "pq: 5/10"):
        with pytest.raises(ValueError):
            Target.from_text(unsupervised)  # nothing to reward: a lone PQ is no score supervision


def test_score_supervision_is_pq_and_sc_when_both_are_given_else_the_overall_score():
    both = Target.from_text("score: 2/10\npq: 6/10\nsc: 8/10")
    assert supervised_keys(both.scores) == ("pq", "sc")
    assert rewards("score: 2/10\npq: 6/10\nsc: 8/10", both)["score"] == 1.0
    assert rewards("score: 2/10", both)["score"] == 0.0  # the axes are what is rewarded
    assert score_reward({"score": 4}, {"score": 6, "pq": 1}) == pytest.approx(0.8)


def test_format_reward_on_score_only_targets_accepts_a_score_or_pq_and_sc():
    """Paper Section 3.4: 1 "if a score can be parsed"; the release accepts an overall score or PQ+SC."""
    overall = Target.from_text("score: 5/10")
    axes = Target.from_text("pq: 6/10\nsc: 8/10")
    assert rewards("pq: 1/10\nsc: 2/10", overall)["format"] == 1.0
    assert rewards("score: 3/10", axes)["format"] == 1.0
    assert rewards("pq: 1/10", axes)["format"] == 0.0  # one axis alone is not a score
    assert rewards("score: 3/10", axes, format_rule="supervised")["format"] == 0.0
    assert rewards("pq: 1/10\nsc: 2/10", axes, format_rule="supervised")["format"] == 1.0
    with pytest.raises(ValueError):
        rewards("none", axes, format_rule="paper")


def test_mark_weight_is_a_parameter():
    assert weighted_counts(PRED, TARGET, mark_weight=3.0) == (4.0, 2.0, 4.0)
    assert dice_reward(PRED, TARGET, mark_weight=1.0) == pytest.approx(0.5)  # unweighted: 2*2 / (2*2 + 2 + 2)


def test_completion_parts_are_joined_by_a_line_break():
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "score: 7/10"},
                                               {"type": "text", "text": "r5: 8"}]}]
    assert completion_text(parts) == "score: 7/10\nr5: 8"
    target = Target.from_text("score: 7/10\nr5: 8")
    assert rewards(completion_text(parts), target)["dice"] == 1.0


def test_trl_calling_convention():
    funcs, weights = reward_functions()
    assert weights == [1.0, 0.3, 0.1]
    assert [f.__name__ for f in funcs] == ["viescore2_dice", "viescore2_score", "viescore2_format"]
    completions = ["score: 6/10\nnone",
                   [{"role": "assistant", "content": "score: 9/10\nr1: 1"}],
                   [{"role": "assistant", "content": [{"type": "text", "text": "score: 9/10\n"},
                                                      {"type": "text", "text": "none"}]}]]
    kwargs = dict(prompts=["p"] * 3, completions=completions, completion_ids=[[1], [2], [3]],
                  target=["score: 8/10\nnone"] * 3, image=[None] * 3, trainer_state=None, log_extra=None)
    assert funcs[0](**kwargs) == [1.0, 0.0, 1.0]
    assert funcs[1](**kwargs) == pytest.approx([0.8, 0.9, 0.9])
    assert funcs[2](**kwargs) == [1.0, 1.0, 1.0]
    total = RewardFunction("total")(**kwargs)
    assert all(isinstance(v, float) for v in total)
    assert total == pytest.approx([1.0 + 0.24 + 0.1, 0.27 + 0.1, 1.0 + 0.27 + 0.1])
    with pytest.raises(KeyError, match="target"):
        funcs[0](prompts=["p"], completions=["none"], completion_ids=[[1]])
