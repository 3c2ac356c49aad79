"""FAGER: factuality of text-to-image outputs against a verified, three-level factual rubric.

The model-free core holds the record schemas, the scoring and gating rules, the QA-set
store, the Factual A/B test and replay of saved runs (formats in fager/README.md). Over a
judge: the agents (`FagerAgents`, prompts in `PromptPack`), the pipeline (`Fager`:
`build_qa`, `score`), reference providers, refinement (`refine`), the VQAScore-style
baseline, and `FagerScore` (torchmetrics, imported on first use).
"""
from __future__ import annotations

from typing import Any

from fager.abtest import ABReport, ab_test
from fager.agents import AgentOutput, FagerAgents
from fager.baseline import VQAScoreBaseline, baseline_ab_test
from fager.pack import PromptPack, load_pack
from fager.parsing import AnswerParseError, normalize_answer, parse_answer, read_answer_list
from fager.core import Fager, QABuild, QABuildError
from fager.qa_store import (
    AgentModels, QAFormatError, QARecord, QASetKey, QAStore, format_qa_csv, parse_qa_csv, read_qa_csv,
    write_qa_csv,
)
from fager.references import CallableReferences, FolderReferences, MappingReferences, NoReferences, as_provider
from fager.refine import RefineReport, refine
from fager.replay import (
    ReplayFormatError, details_scores, format_summary, read_details, read_summary, rescore, rescore_details,
    summary_scores, verdict_to_record, write_summary, write_verdicts,
)
from fager.schema import (
    CATEGORIES, LEVELS, AnswerCounts, CategoryFacts, FactChange, Gating, LevelRubric, LevelScores, ParseFailure,
    QAItem, QAItems, QASet, QuestionAnswer, QuestionResult, ReferenceExtraction, Rubric, Verdict, Verification,
)
from fager.scoring import (
    ANSWER_POINTS, DEFAULT_POLICY, SCORING_VERSION, GatingPolicy, answer_points, decide, mean_score, score_answer,
    score_answers, should_keep, should_regenerate,
)

__all__ = [
    "ABReport", "ab_test", "AnswerParseError", "normalize_answer", "parse_answer", "read_answer_list",
    "AgentOutput", "FagerAgents", "VQAScoreBaseline", "baseline_ab_test", "PromptPack", "load_pack", "Fager",
    "QABuild", "QABuildError", "CallableReferences", "FolderReferences", "MappingReferences", "NoReferences",
    "as_provider", "RefineReport", "refine", "FagerScore",
    "AgentModels", "QAFormatError", "QARecord", "QASetKey", "QAStore", "format_qa_csv", "parse_qa_csv",
    "read_qa_csv", "write_qa_csv",
    "ReplayFormatError", "details_scores", "format_summary", "read_details", "read_summary", "rescore",
    "rescore_details", "summary_scores", "verdict_to_record", "write_summary", "write_verdicts",
    "CATEGORIES", "LEVELS", "AnswerCounts", "CategoryFacts", "FactChange", "Gating", "LevelRubric", "LevelScores",
    "ParseFailure", "QAItem", "QAItems", "QASet", "QuestionAnswer", "QuestionResult", "ReferenceExtraction",
    "Rubric", "Verdict", "Verification",
    "ANSWER_POINTS", "DEFAULT_POLICY", "SCORING_VERSION", "GatingPolicy", "answer_points", "decide", "mean_score",
    "score_answer", "score_answers",
    "should_keep", "should_regenerate",
]


def __getattr__(name: str) -> Any:
    """`FagerScore` is imported on first use: it needs torch and torchmetrics."""
    if name == "FagerScore":
        from fager.metric import FagerScore
        return FagerScore
    raise AttributeError(f"module 'fager' has no attribute {name!r}")
