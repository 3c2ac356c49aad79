"""FAGER: factuality of text-to-image outputs against a verified, three-level factual rubric.

The layout every method package shares (docs/layout.md): `core` (`Fager`: `build_qa`, `score`), `pack`
(the agents' prompts), `scoring` (answer points and gating), `parsing`, `metric` (`FagerScore`,
torchmetrics), `spec`, `cli` and `report`; `records` (`Verdict`), `baselines` (VQAScore-style),
`asking` (the agents, `FagerAgents`), `schema` (what the agents write, and its decoding schemas),
`saved_runs` (released runs re-scored) and `evaluation` (the Factual A/B test). Besides: the QA-set
store, reference providers and refinement (`refine`) (formats in fager/README.md).
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use (`FagerScore` needs torch and torchmetrics).
_EXPORTS = {
    **dict.fromkeys(("ABReport", "ab_test"), ".evaluation"),
    **dict.fromkeys(("AgentOutput", "FagerAgents"), ".asking"),
    **dict.fromkeys(("VQAScoreBaseline", "baseline_ab_test"), ".baselines"),
    **dict.fromkeys(("PromptPack", "load_pack"), ".pack"),
    **dict.fromkeys(("AnswerParseError", "normalize_answer", "parse_answer", "read_answer_list"), ".parsing"),
    **dict.fromkeys(("Fager", "QABuild", "QABuildError"), ".core"),
    **dict.fromkeys(("AgentModels", "QAFormatError", "QARecord", "QASetKey", "QAStore", "format_qa_csv",
                     "parse_qa_csv", "read_qa_csv", "write_qa_csv"), ".qa_store"),
    **dict.fromkeys(("CallableReferences", "FolderReferences", "MappingReferences", "NoReferences",
                     "as_provider"), ".references"),
    **dict.fromkeys(("RefineReport", "refine"), ".refine"),
    **dict.fromkeys(("ReplayFormatError", "details_scores", "format_summary", "read_details", "read_summary",
                     "rescore", "rescore_details", "summary_scores", "verdict_to_record", "write_summary",
                     "write_verdicts"), ".saved_runs"),
    **dict.fromkeys(("CATEGORIES", "LEVELS", "CategoryFacts", "FactChange", "LevelRubric", "QAItem", "QAItems",
                     "QASet", "QuestionAnswer", "ReferenceExtraction", "Rubric", "Verification"), ".schema"),
    **dict.fromkeys(("AnswerCounts", "Gating", "LevelScores", "ParseFailure", "QuestionResult", "Verdict"),
                    ".records"),
    **dict.fromkeys(("ANSWER_POINTS", "DEFAULT_POLICY", "SCORING_VERSION", "GatingPolicy", "answer_points",
                     "decide", "mean_score", "score_answer", "score_answers", "should_keep",
                     "should_regenerate"), ".scoring"),
    **dict.fromkeys(("FagerScore", "fager_score"), ".metric"),
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
