"""Scoring and gating, checked against hand-computed values (METHODS.md, FAGER section 3)."""
from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fager.schema import QAItem, QuestionAnswer
from fager.scoring import (
    ANSWER_POINTS, GatingPolicy, answer_points, decide, mean_score, score_answers, should_keep, should_regenerate,
)


def items(*levels: str) -> list[QAItem]:
    """One QA item per given level, with distinct questions."""
    return [QAItem(question=f"Question {i}?", level=level, category="existence", importance="high",
                   source_fact=f"Fact {i}.") for i, level in enumerate(levels)]


def qa(answer: str) -> QuestionAnswer:
    return QuestionAnswer(answer=answer, rationale=f"Saw {answer}.")


def test_answer_points():
    assert dict(ANSWER_POINTS) == {"yes": 1.0, "no": 0.0, "unknown": 0.5}
    assert answer_points("unknown") == 0.5
    with pytest.raises(ValueError, match="maybe"):
        answer_points("maybe")


def test_mean_score_hand_values():
    assert mean_score(["yes", "no", "unknown"]) == 50.0
    assert mean_score(["yes", "yes", "unknown"]) == pytest.approx(250 / 3)
    assert mean_score(["yes"] * 19 + ["no"]) == 95.0
    assert mean_score(["no"] * 4 + ["yes"]) == 20.0
    assert mean_score([]) is None  # no questions: no score, not 0 or 100
    with pytest.raises(ValueError):
        mean_score(["yes", "Yes"])


@given(st.lists(st.sampled_from(["yes", "no", "unknown"]), min_size=1, max_size=60))
@settings(max_examples=200, deadline=None)
def test_mean_score_is_the_correctly_rounded_fraction(answers):
    exact = sum(Fraction(1) if a == "yes" else Fraction(1, 2) if a == "unknown" else Fraction(0)
                for a in answers) / len(answers) * 100
    assert mean_score(answers) == float(exact)
    assert (mean_score(answers) >= 95) == (exact >= 95)
    assert (mean_score(answers) <= 20) == (exact <= 20)


@pytest.mark.parametrize(("score", "expected"), [(20.0, True), (20.01, False), (0.0, True), (19.99, True)])
def test_regenerate_boundary_inclusive(score, expected):
    assert should_regenerate(score) is expected


@pytest.mark.parametrize(("score", "expected"), [(95.0, True), (94.99, False), (100.0, True)])
def test_keep_boundary_inclusive(score, expected):
    assert should_keep(score) is expected


def test_exclusive_policy_follows_the_paper_wording():
    strict = GatingPolicy(inclusive=False)
    assert not should_regenerate(20.0, strict) and should_regenerate(19.99, strict)
    assert not should_keep(95.0, strict) and should_keep(95.01, strict)
    assert decide(100.0, 95.0, strict) == "edit"
    assert decide(100.0, 95.0) == "keep"


@pytest.mark.parametrize(("level_1", "overall", "expected"), [
    (20.0, 20.0, "regenerate"), (20.01, 20.01, "edit"), (100.0, 95.0, "keep"), (100.0, 94.99, "edit"),
    (None, 96.0, "keep"), (None, None, None), (10.0, None, "regenerate"),
])
def test_decide(level_1, overall, expected):
    assert decide(level_1, overall) == expected


def test_thresholds_are_configurable():
    policy = GatingPolicy(regenerate_threshold=40.0, keep_threshold=80.0)
    assert decide(40.0, 40.0, policy) == "regenerate"
    assert decide(50.0, 80.0, policy) == "keep"
    assert decide(50.0, 79.9, policy) == "edit"
    with pytest.raises(ValueError, match="exceeds"):
        GatingPolicy(regenerate_threshold=90.0, keep_threshold=80.0)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        GatingPolicy(keep_threshold=120.0)
    with pytest.raises(ValueError):
        GatingPolicy(regenerate_threshold=float("nan"))


def test_overall_is_the_mean_over_all_questions_not_of_levels():
    qs = items("level_1", "level_1", "level_2", "level_2", "level_2", "level_2")
    verdict = score_answers(qs, [qa("yes"), qa("yes"), qa("yes"), qa("no"), qa("no"), qa("no")])
    assert verdict.level_scores.level_1 == 100.0
    assert verdict.level_scores.level_2 == 25.0
    assert verdict.level_scores.level_3 is None  # no level-3 questions: no score
    assert verdict.score == 50.0  # 3 of 6; the mean of level scores would be 62.5
    assert verdict.decision == "edit"
    assert verdict.gating.evaluated_levels == ["level_1", "level_2"]
    assert verdict.gating.skipped_levels == []
    assert (verdict.counts.yes, verdict.counts.no, verdict.counts.unknown, verdict.counts.total) == (3, 3, 0, 6)


def test_hand_made_regenerate_verdict():
    """Level 1 at exactly 20 regenerates; levels 2-3 are not scored, even when answered."""
    qs = items(*["level_1"] * 5, "level_2", "level_3", "level_3")
    answers = ["no", "no", "unknown", "unknown", "no", "yes", "yes", "yes"]  # level 1: 1 of 5 = 20
    verdict = score_answers(qs, [qa(a) for a in answers], feedback="the bottle on a white background")
    assert verdict.decision == "regenerate"
    assert verdict.level_scores.level_1 == 20.0
    assert verdict.level_scores.level_2 is None and verdict.level_scores.level_3 is None
    assert verdict.score == verdict.level_scores.level_1 == 20.0
    assert verdict.gating.evaluated_levels == ["level_1"]
    assert verdict.gating.skipped_levels == ["level_2", "level_3"]
    assert verdict.gating.level_1_score == 20.0
    assert [q.status for q in verdict.questions] == ["answered"] * 5 + ["skipped"] * 3
    assert verdict.counts.total == 5 and verdict.counts.unknown == 2
    assert verdict.parse_failures == []
    assert verdict.feedback == "the bottle on a white background"


def test_just_above_the_regenerate_gate_evaluates_everything():
    qs = items(*["level_1"] * 5, "level_2")
    verdict = score_answers(qs, [qa(a) for a in ["yes", "no", "no", "no", "unknown", "yes"]])  # level 1: 30
    assert verdict.decision == "edit"
    assert verdict.score == pytest.approx(100 * 2.5 / 6)
    assert verdict.gating.skipped_levels == []


def test_exactly_95_is_keep_and_feedback_is_dropped_for_keep():
    qs = items(*["level_1"] * 4, *["level_2"] * 16)
    answers = ["yes"] * 19 + ["no"]
    verdict = score_answers(qs, [qa(a) for a in answers], feedback="unused")
    assert verdict.score == 95.0
    assert verdict.decision == "keep"
    assert verdict.feedback is None
    answers = ["yes"] * 18 + ["unknown", "no"]  # 92.5
    assert score_answers(qs, [qa(a) for a in answers]).decision == "edit"


def test_missing_answer_is_a_parse_failure_not_unknown():
    qs = items("level_1", "level_1", "level_2", "level_2")
    verdict = score_answers(qs, [qa("yes"), qa("yes"), qa("yes")])  # the last question has no answer
    assert len(verdict.parse_failures) == 1
    failure = verdict.parse_failures[0]
    assert (failure.position, failure.level, failure.question) == (3, "level_2", "Question 3?")
    assert failure.reason == "missing answer"
    assert verdict.counts.failed == 1 and verdict.counts.total == 3
    assert verdict.level_scores.level_2 == 100.0  # not 75, as an "unknown" would give
    assert verdict.score == 100.0
    assert verdict.questions[3].status == "failed" and verdict.questions[3].score is None


def test_raw_text_is_parsed_and_unreadable_text_is_a_failure():
    qs = items("level_1", "level_1", "level_2")
    verdict = score_answers(qs, {0: "Yes. A bottle is visible.", 1: '{"answer": "unknown", "rationale": "blur"}',
                                 2: "I cannot tell"})
    assert [q.answer for q in verdict.questions] == ["yes", "unknown", None]
    assert verdict.questions[0].rationale == "A bottle is visible."
    assert verdict.questions[2].raw == "I cannot tell"
    assert verdict.parse_failures[0].reason.startswith("unparseable")
    assert verdict.level_scores.level_1 == 75.0 and verdict.level_scores.level_2 is None
    assert verdict.score == 75.0


def test_unanswered_level_1_leaves_the_gate_undecided():
    qs = items("level_1", "level_2")
    verdict = score_answers(qs, {1: qa("yes")})
    assert verdict.decision is None
    assert verdict.level_scores.level_1 is None
    assert verdict.score == 100.0
    assert verdict.counts.failed == 1


def test_no_level_1_questions_means_no_gate():
    verdict = score_answers(items("level_2", "level_3"), [qa("no"), qa("no")])
    assert verdict.gating.level_1_score is None
    assert verdict.decision == "edit"  # 0 overall, but nothing at level 1 to trigger regenerate
    assert verdict.gating.evaluated_levels == ["level_2", "level_3"]


def test_empty_qa_set_has_no_score_and_no_decision():
    verdict = score_answers([], [])
    assert verdict.score is None and verdict.decision is None
    assert verdict.counts.total == 0


def test_bad_answer_containers_are_errors():
    qs = items("level_1")
    with pytest.raises(ValueError, match="2 answers for 1 questions"):
        score_answers(qs, [qa("yes"), qa("no")])
    with pytest.raises(ValueError, match="outside"):
        score_answers(qs, {3: qa("yes")})
    with pytest.raises(TypeError):
        score_answers(qs, [1])
    with pytest.raises(TypeError):
        score_answers(qs, "yes")


@given(st.lists(st.tuples(st.sampled_from(["level_1", "level_2", "level_3"]),
                          st.sampled_from(["yes", "no", "unknown", None])), max_size=25))
@settings(max_examples=200, deadline=None)
def test_verdict_invariants(pairs):
    qs = items(*[level for level, _ in pairs])
    answers = [None if a is None else qa(a) for _, a in pairs]
    verdict = score_answers(qs, answers)
    scored = [q for q in verdict.questions if q.status == "answered"]
    assert verdict.counts.total == len(scored)
    assert verdict.counts.failed == len(verdict.parse_failures)
    assert len(verdict.questions) == len(qs)
    if scored:
        assert verdict.score == mean_score([q.answer for q in scored])
        assert 0.0 <= verdict.score <= 100.0
    level_1 = verdict.level_scores.level_1
    if verdict.decision == "regenerate":
        assert level_1 is not None and level_1 <= 20.0
        assert verdict.score == level_1
        assert verdict.level_scores.level_2 is None and verdict.level_scores.level_3 is None
    elif verdict.decision is not None:
        assert verdict.decision == ("keep" if verdict.score >= 95.0 else "edit")
