"""Image Regeneration (ImageRepainter): evaluate a text-to-image model by how closely it can paint a
reference image again, from prompts an MLLM writes and revises over rounds.

The layout every method package shares (docs/layout.md): `core` (`RegenerationLoop`), `pack` (the
prompt pack), `scoring` (similarity percent, ratings, selection), `parsing`, `metric`
(`RegenerationSimilarity`, torchmetrics), `spec`, `cli` and `report`; `records` (`ItemResult`),
`baselines` (direct and interrogator prompts), `figures`, `asking` (the stage runner, `asking.iut`
and `asking.judging`, the MLLM ratings), `schema`, `saved_runs` (the run folder) and `evaluation`
(`evaluation.benchmark`, `evaluation.compare`). Besides: `similarity` (the CLIP and DINOv2 encoders)
and `config`.
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use, so `import regeneration` imports no torch.
_EXPORTS = {
    "IUT": ".schema",
    **dict.fromkeys(("build_iuts", "initial_prompts", "IUTResult", "InitialPrompt"), ".asking.iut"),
    **dict.fromkeys(("SimilarityScorer", "ClipEncoder", "DinoEncoder", "regeneration_similarity"), ".similarity"),
    **dict.fromkeys(("judge_pairs", "judge_text_image"), ".asking.judging"),
    **dict.fromkeys(("direct_prompts", "interrogator_prompts"), ".baselines"),
    "LoopConfig": ".config",
    "RegenerationLoop": ".core",
    "ItemResult": ".records",
    **dict.fromkeys(("run_benchmark", "load_references", "release_summary"), ".evaluation.benchmark"),
    "RegenerationSimilarity": ".metric",
    **dict.fromkeys(("PromptPack", "load_pack"), ".pack"),
    "SPEC": ".spec",
    **dict.fromkeys(("normalize_rating", "SELECTION_PRESETS"), ".scoring"),
    **dict.fromkeys(("extract_json", "JSONReadError"), ".parsing"),
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
