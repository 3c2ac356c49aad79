"""FAGER against its release (SGT-LIM/FAGER): one test per corpus line of tests/data/golden/fager.

Each adapter turns a corpus input into calls of the project's own public functions and their
result into the release's schema (tests/data/golden/README.md); the scoring itself is the
library's.
"""
import math

import pytest

from fager import evaluation, parsing, saved_runs, scoring
from fager.schema import QAItem, QuestionAnswer

from .replay import cases, golden_test, number, replay


def _items(levels: list[str]) -> list[QAItem]:
    """A QA set with the corpus's levels; the texts do not enter the scores."""
    return [QAItem(question=f"question {i}?", level=level, category="existence", importance="high",
                   source_fact=f"fact {i}") for i, level in enumerate(levels)]


def _score_image(inp: dict) -> dict:
    """`score_answers` over the answer values (null: the model's list left the question out).

    A QA set or thresholds the project refuses (a level outside level_1..3, a threshold outside
    0..100) are its documented ValueError.
    """
    answers = [None if value is None else QuestionAnswer(answer=parsing.normalize_answer(value), rationale="")
               for value in inp["answers"]]
    try:
        policy = scoring.GatingPolicy(regenerate_threshold=inp["regenerate_threshold"],
                                      keep_threshold=inp["keep_threshold"])
        items = _items(inp["levels"])
    except ValueError as error:  # pydantic's ValidationError included
        return {"error": type(error).__name__}
    verdict = scoring.score_answers(items, answers, policy)
    record = saved_runs.verdict_to_record(verdict)
    level_scores = {level: value for level, value in verdict.level_scores.model_dump().items()
                    if level in verdict.gating.evaluated_levels and value is not None}
    return {"decision": verdict.decision, "overall_score": verdict.score, "level_scores": level_scores,
            "gating": record["gating"],
            "scores": {"overall_score": record["scores"]["overall_score"],
                       "level_scores": {k: v for k, v in record["scores"]["level_scores"].items() if v is not None}},
            "answer_counts": record["answer_counts"],
            "per_question": [[q["position"], q["answer"], q["score"]] for q in record["per_question"]
                             if q["answer"] is not None]}


test_score_image = golden_test(
    "fager/score_image", _score_image,
    "Level scores, overall score, the level-1 gate and the answer counts of one image.")


def _score_answer(inp: dict) -> dict:
    try:
        value = parsing.answer_value(inp["entry"])
    except parsing.AnswerParseError as error:
        return {"error": type(error).__name__}
    normalized = parsing.normalize_answer(value)
    try:
        on_raw = scoring.score_answer(value)
    except TypeError:  # the release's score_answer fails on a value that is not text
        on_raw = None
    return {"normalized": normalized, "score": scoring.answer_points(normalized), "score_answer_on_raw": on_raw}


test_score_answer = golden_test("fager/score_answer", _score_answer, "One answer value normalised and scored.")


def _read_reply(content: str, strip_thinking: bool) -> dict:
    try:
        return {"answers": parsing.read_answer_list(content, strip_thinking=strip_thinking)}
    except parsing.AnswerParseError as error:
        return {"error": type(error).__name__}


@pytest.mark.parametrize("case", cases("fager/parse_answer_json"))
def test_parse_answer_json(case):
    """The batched evaluator reply, as the openai script reads it and as the qwen script does."""
    replay("fager/parse_answer_json", case, lambda inp: {"openai": _read_reply(inp["content"], False),
                                                         "qwen": _read_reply(inp["content"], True)})


def _nan(value):
    return math.nan if value is None else value


def _ab_test(inp: dict) -> dict:
    real = [(key, number(score)) for key, score in inp["real"]]
    fake = [(key, number(score)) for key, score in inp["fake"]]
    try:
        report = evaluation.ab_test(real, fake, tie=inp["tie_mode"], higher_is_better=not inp["lower_is_better"])
    except ValueError as error:
        return {"error": type(error).__name__}
    margins = report.margin_summary()
    out = {"pairs": report.pairs, "correct": report.wins, "wrong": report.losses, "ties": report.ties,
           "skipped": report.skipped, "acc": _nan(report.accuracy)}
    for group, name in (("all", "all"), ("wins", "correct"), ("losses", "wrong")):
        out[f"margin_mean_{name}"] = _nan(margins[group]["mean"])
        out[f"margin_std_{name}"] = _nan(margins[group]["std"])
    return out


test_ab_test = golden_test(
    "fager/ab_test", _ab_test,
    "The Factual A/B test: counts, accuracy per tie mode and margin statistics.")
