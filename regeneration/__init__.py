"""Image Regeneration (ImageRepainter): evaluate a text-to-image model by how closely it can paint a
reference image again, from prompts an MLLM writes and revises over rounds.

Names are resolved on first use, so `import regeneration` stays light (no torch import).
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "IUT": "regeneration.schema", "build_iuts": "regeneration.iut", "initial_prompts": "regeneration.iut",
    "IUTResult": "regeneration.iut", "InitialPrompt": "regeneration.iut",
    "SimilarityScorer": "regeneration.similarity", "ClipEncoder": "regeneration.similarity",
    "DinoEncoder": "regeneration.similarity", "regeneration_similarity": "regeneration.similarity",
    "judge_pairs": "regeneration.judging", "judge_text_image": "regeneration.judging",
    "normalize_rating": "regeneration.judging", "direct_prompts": "regeneration.baselines",
    "interrogator_prompts": "regeneration.baselines", "LoopConfig": "regeneration.loop",
    "RegenerationLoop": "regeneration.loop", "ItemResult": "regeneration.loop",
    "run_benchmark": "regeneration.benchmark", "load_references": "regeneration.benchmark",
    "RegenerationSimilarity": "regeneration.metric", "PromptPack": "regeneration.prompts",
    "load_pack": "regeneration.prompts", "SPEC": "regeneration.spec",
    "SELECTION_PRESETS": "regeneration.config", "release_summary": "regeneration.benchmark",
    "extract_json": "regeneration.parsing", "JSONReadError": "regeneration.parsing",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Resolve public names on first use."""
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'regeneration' has no attribute {name!r}")
