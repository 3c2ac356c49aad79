"""FAGER scoring as pure functions: answer points, level and overall means, and the coarse-to-fine gate.

yes = 1, no = 0, unknown = 0.5. A level's score is the mean over its answered
questions x 100; the overall score is the mean over ALL answered questions x 100 (not
the mean of the level scores). Level 1 is scored first: at or below the regenerate
threshold the image is `regenerate`, levels 2-3 are skipped and the overall score is the
level-1 score; otherwise an overall score at or above the keep threshold is `keep`, and
anything else is `edit`. A missing or unreadable answer is a counted parse failure and is
left out of every mean; it is never scored as `unknown`.

Means are computed as 50 * (2*yes + unknown) / n: the numerator is an exact integer, so
each score is the correctly rounded value of the true fraction, and comparisons with
thresholds such as 20 or 95 are exact.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from .parsing import AnswerParseError, normalize_answer, parse_answer
from .records import AnswerCounts, Gating, LevelScores, ParseFailure, QuestionResult, Verdict, status_of
from .schema import LEVELS, Decision, QAItem, QuestionAnswer

#: Recorded in every verdict's provenance; bumped whenever a default changes what a verdict says.
#: 2: an `answer` value other than yes/no/unknown is "unknown" (the release's rule), not a failure.
SCORING_VERSION = "fager-scoring-2"

#: The points of each answer to a yes-expected question.
ANSWER_POINTS: Mapping[str, float] = MappingProxyType({"yes": 1.0, "no": 0.0, "unknown": 0.5})
_HALF_POINTS = {"yes": 2, "no": 0, "unknown": 1}

AnswerInput = QuestionAnswer | str | None


def answer_points(answer: str) -> float:
    """Points of one answer; anything but yes/no/unknown is an error, not a score.

    Examples:
        >>> answer_points("yes"), answer_points("no"), answer_points("unknown")
        (1.0, 0.0, 0.5)
        >>> answer_points("maybe")
        Traceback (most recent call last):
        ...
        ValueError: answer must be one of yes, no, unknown; got 'maybe'
    """
    try:
        return ANSWER_POINTS[answer]
    except KeyError:
        raise ValueError(f"answer must be one of yes, no, unknown; got {answer!r}") from None


def score_answer(value: object) -> float:
    """Points of one raw `answer` value, as the release's `score_answer` gives them.

    Text is normalised with `normalize_answer` (any word but yes/no/unknown scores 0.5) and
    None is unknown; any other type (a number, a list) is a TypeError, not a score.

    Examples:
        >>> score_answer(" Yes "), score_answer("maybe"), score_answer(None)
        (1.0, 0.5, 0.5)
    """
    if value is not None and not isinstance(value, str):
        raise TypeError(f"an answer value must be text or None, got {type(value).__name__}")
    return ANSWER_POINTS[normalize_answer(value)]


def mean_score(answers: Iterable[str]) -> float | None:
    """Mean points x 100 over the given answers; None when there are none (no score, not 0).

    Examples:
        Two yes, one no and one unknown: (1 + 1 + 0 + 0.5) / 4 x 100:

        >>> mean_score(["yes", "yes", "no", "unknown"])
        62.5
        >>> mean_score([]) is None
        True
    """
    answers = list(answers)
    if not answers:
        return None
    for answer in answers:
        answer_points(answer)
    return 50.0 * sum(_HALF_POINTS[a] for a in answers) / len(answers)


@dataclass(frozen=True)
class GatingPolicy:
    """The two decision thresholds; inclusive comparisons (<=, >=) as in the released runs.

    Args:
        regenerate_threshold: regenerate when the level-1 score is at or below this (0-100).
        keep_threshold: keep when the overall score is at or above this (0-100).
        inclusive: compare with <= and >= (the released runs); False: < and > (the paper's
            wording, "below" and "exceeds").

    Examples:
        The released runs compare inclusively: exactly 95 keeps, exactly 20 regenerates.

        >>> policy = GatingPolicy()
        >>> should_keep(95.0, policy), should_regenerate(20.0, policy)
        (True, True)
        >>> paper = GatingPolicy(inclusive=False)
        >>> should_keep(95.0, paper), should_regenerate(20.0, paper)
        (False, False)
        >>> GatingPolicy(regenerate_threshold=60, keep_threshold=50)
        Traceback (most recent call last):
        ...
        ValueError: regenerate_threshold 60 exceeds keep_threshold 50
    """

    regenerate_threshold: float = 20.0
    keep_threshold: float = 95.0
    inclusive: bool = True  # False: the paper's wording, "below" (<) and "exceeds" (>)

    def __post_init__(self) -> None:
        for name in ("regenerate_threshold", "keep_threshold"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 100:
                raise ValueError(f"{name} must be a number in [0, 100], got {value!r}")
        if self.regenerate_threshold > self.keep_threshold:
            raise ValueError(f"regenerate_threshold {self.regenerate_threshold} exceeds "
                             f"keep_threshold {self.keep_threshold}")


#: The released runs' thresholds: regenerate when the level-1 score is at most 20, keep when the overall
#: score is at least 95, edit otherwise.
DEFAULT_POLICY = GatingPolicy()


def should_regenerate(level_1_score: float, policy: GatingPolicy = DEFAULT_POLICY) -> bool:
    """Whether a level-1 score fails the core object/scene check.

    Examples:
        >>> should_regenerate(20.0), should_regenerate(20.5)
        (True, False)
    """
    if policy.inclusive:
        return level_1_score <= policy.regenerate_threshold
    return level_1_score < policy.regenerate_threshold


def should_keep(overall_score: float, policy: GatingPolicy = DEFAULT_POLICY) -> bool:
    """Whether an overall score is high enough to accept the image as it is.

    Examples:
        >>> should_keep(95.0), should_keep(94.9)
        (True, False)
    """
    if policy.inclusive:
        return overall_score >= policy.keep_threshold
    return overall_score > policy.keep_threshold


def decide(level_1_score: float | None, overall_score: float | None,
           policy: GatingPolicy = DEFAULT_POLICY) -> Decision | None:
    """keep / edit / regenerate from the two scores; None when there is no overall score.

    A None level-1 score means level 1 holds no question, so the gate has nothing to test.

    Examples:
        >>> decide(15.0, 15.0), decide(100.0, 96.0), decide(80.0, 75.0)
        ('regenerate', 'keep', 'edit')
        >>> decide(None, None) is None
        True
    """
    if level_1_score is not None and should_regenerate(level_1_score, policy):
        return "regenerate"
    if overall_score is None:
        return None
    return "keep" if should_keep(overall_score, policy) else "edit"


def score_answers(
    items: Sequence[QAItem],
    answers: Mapping[int, AnswerInput] | Sequence[AnswerInput],
    policy: GatingPolicy = DEFAULT_POLICY,
    *,
    prompt: str | None = None,
    index: str | None = None,
    image: str | None = None,
    feedback: str | None = None,
    provenance: Mapping[str, str] | None = None,
) -> Verdict:
    """Score one image's answers to a QA set into a Verdict, running the level-1 gate.

    `answers` maps a question's position in `items` to a parsed answer, raw model text
    (parsed here) or None (no answer); a list is read by position. A position with no
    usable answer is a parse failure. Answers to levels the gate skips are ignored.
    The decision is None when level 1 has questions but none was answered (the gate
    cannot be decided) or when no question at all was answered.

    Examples:
        Level 1 scores 50 (yes, no), level 2 scores 100 (yes, yes); the overall score is the
        mean over all four answers, 75, so the image is edited. A raw text answer is parsed:

        >>> from fager.schema import QAItem
        >>> def item(question, level):
        ...     return QAItem(question=question, level=level, category="existence",
        ...                   importance="high", source_fact=question)
        >>> items = [item("Is there a cat?", "level_1"), item("Is there a sofa?", "level_1"),
        ...          item("Is the cat black?", "level_2"), item("Is the sofa red?", "level_2")]
        >>> verdict = score_answers(items, ["yes", "No, the room is empty.", "yes", "yes"])
        >>> verdict.level_scores.level_1, verdict.level_scores.level_2, verdict.score
        (50.0, 100.0, 75.0)
        >>> verdict.decision
        'edit'

        A level-1 score at or below 20 regenerates and skips levels 2 and 3; an unreadable
        answer is a counted parse failure, left out of the means:

        >>> verdict = score_answers(items, ["no", "???", "yes", "yes"])
        >>> verdict.decision, verdict.score, verdict.gating.skipped_levels
        ('regenerate', 0.0, ['level_2'])
        >>> verdict.counts.failed, verdict.parse_failures[0].position
        (1, 1)
    """
    by_position = _answers_by_position(items, answers)
    results: list[QuestionResult | None] = [None] * len(items)
    failures: list[ParseFailure] = []
    positions = {level: [p for p, item in enumerate(items) if item.level == level] for level in LEVELS}

    def evaluate(level: str) -> list[str]:
        scored = []
        for position in positions[level]:
            result, reason = _evaluate_one(position, items[position], by_position.get(position))
            results[position] = result
            if reason is None:
                scored.append(result.answer)
            else:
                failures.append(ParseFailure(position=position, level=result.level,
                                             question=result.question, reason=reason))
        return scored

    scored_by_level: dict[str, list[str]] = {}
    if positions["level_1"]:
        scored_by_level["level_1"] = evaluate("level_1")
    level_1_score = mean_score(scored_by_level.get("level_1", []))
    gate_undecided = bool(positions["level_1"]) and level_1_score is None
    regenerate = level_1_score is not None and should_regenerate(level_1_score, policy)
    skipped = []
    for level in ("level_2", "level_3"):
        if not positions[level]:
            continue
        if regenerate:
            skipped.append(level)
        else:
            scored_by_level[level] = evaluate(level)
    for position, item in enumerate(items):
        if results[position] is None:
            results[position] = QuestionResult(**item.model_dump(), position=position, status="skipped")

    all_scored = [a for level in LEVELS for a in scored_by_level.get(level, [])]
    overall = mean_score(all_scored)
    decision = None if gate_undecided else decide(level_1_score, overall, policy)
    counts = AnswerCounts(yes=all_scored.count("yes"), no=all_scored.count("no"),
                          unknown=all_scored.count("unknown"), total=len(all_scored), failed=len(failures))
    return Verdict(
        id=index, status=status_of(overall), score=overall, prompt=prompt, image=image,
        level_scores=LevelScores(**{lv: mean_score(a) for lv, a in scored_by_level.items()}),
        counts=counts,
        decision=decision,
        feedback=feedback if decision in ("edit", "regenerate") else None,
        gating=Gating(evaluated_levels=[lv for lv in LEVELS if lv in scored_by_level], skipped_levels=skipped,
                      level_1_score=level_1_score, regenerate_threshold=policy.regenerate_threshold,
                      keep_threshold=policy.keep_threshold, inclusive=policy.inclusive),
        questions=[r for r in results if r is not None],
        parse_failures=failures,
        provenance=dict(provenance or {}),
    )


def _answers_by_position(items: Sequence[QAItem],
                         answers: Mapping[int, AnswerInput] | Sequence[AnswerInput]) -> dict[int, AnswerInput]:
    if isinstance(answers, Mapping):
        by_position = dict(answers)
    elif isinstance(answers, Sequence) and not isinstance(answers, (str, bytes)):
        if len(answers) > len(items):
            raise ValueError(f"{len(answers)} answers for {len(items)} questions")
        by_position = dict(enumerate(answers))
    else:
        raise TypeError(f"answers must be a mapping or a sequence, got {type(answers).__name__}")
    stray = [p for p in by_position if not isinstance(p, int) or not 0 <= p < len(items)]
    if stray:
        raise ValueError(f"answers for positions outside the QA set of {len(items)}: {stray[:5]}")
    return by_position


def _evaluate_one(position: int, item: QAItem, value: AnswerInput) -> tuple[QuestionResult, str | None]:
    """The question's result and, for a failure, why it failed."""
    base = {**item.model_dump(), "position": position}
    if value is None:
        return QuestionResult(**base, status="failed"), "missing answer"
    if isinstance(value, str):
        try:
            value = parse_answer(value)
        except AnswerParseError as error:
            return QuestionResult(**base, status="failed", raw=value), f"unparseable: {error}"
    if not isinstance(value, QuestionAnswer):
        raise TypeError(f"answer at position {position} must be QuestionAnswer, str or None, "
                        f"got {type(value).__name__}")
    return QuestionResult(**base, status="answered", answer=value.answer, rationale=value.rationale,
                          score=ANSWER_POINTS[value.answer]), None
