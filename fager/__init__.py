"""FAGER: factuality of text-to-image outputs against a verified, three-level factual rubric.

This package holds the model-free core: the record schemas, the scoring and gating
rules, the QA-set store, the Factual A/B test and replay of saved runs. Formats and
conventions are described in fager/README.md.
"""
from __future__ import annotations

from fager.abtest import ABReport, ab_test
from fager.parsing import AnswerParseError, parse_answer
from fager.qa_store import (
    AgentModels, QAFormatError, QARecord, QASetKey, QAStore, format_qa_csv, parse_qa_csv, read_qa_csv,
    write_qa_csv,
)
from fager.replay import (
    ReplayFormatError, details_scores, format_summary, read_details, read_summary, rescore, rescore_details,
    summary_scores, write_summary, write_verdicts,
)
from fager.schema import (
    CATEGORIES, LEVELS, AnswerCounts, CategoryFacts, FactChange, Gating, LevelRubric, LevelScores, ParseFailure,
    QAItem, QAItems, QASet, QuestionAnswer, QuestionResult, ReferenceExtraction, Rubric, Verdict, Verification,
)
from fager.scoring import (
    ANSWER_POINTS, DEFAULT_POLICY, GatingPolicy, answer_points, decide, mean_score, score_answers,
    should_keep, should_regenerate,
)

__all__ = [
    "ABReport", "ab_test", "AnswerParseError", "parse_answer",
    "AgentModels", "QAFormatError", "QARecord", "QASetKey", "QAStore", "format_qa_csv", "parse_qa_csv",
    "read_qa_csv", "write_qa_csv",
    "ReplayFormatError", "details_scores", "format_summary", "read_details", "read_summary", "rescore",
    "rescore_details", "summary_scores", "write_summary", "write_verdicts",
    "CATEGORIES", "LEVELS", "AnswerCounts", "CategoryFacts", "FactChange", "Gating", "LevelRubric", "LevelScores",
    "ParseFailure", "QAItem", "QAItems", "QASet", "QuestionAnswer", "QuestionResult", "ReferenceExtraction",
    "Rubric", "Verdict", "Verification",
    "ANSWER_POINTS", "DEFAULT_POLICY", "GatingPolicy", "answer_points", "decide", "mean_score", "score_answers",
    "should_keep", "should_regenerate",
]
