"""TerraVis: world-grounded visual consistency of generated images, judged by a multimodal LLM.

Eligibility, 18 independent violation checks, severity of each violation, then
S = exp(-lam (N_major + alpha N_minor)). The layout every method package shares (docs/layout.md):
`core` (`TerraVis`, to score), `pack` (prompt packs), `scoring` (the formula), `parsing`,
`metric` (`TerraVisScore`, torchmetrics), `spec`, `cli` and `report` (rankings, HTML); `records`
(`ImageRecord`), `baselines` (TerraVis-H, GPTScore), `human` (human annotations), `figures`,
`asking` (each stage's requests), `schema` (the answer grammar), `saved_runs` (the release's saved
answers) and `evaluation` (the paper's analyses over saved records).
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use (the torchmetrics face imports torch).
_EXPORTS = {
    "__version__": "vlmjudge",
    **dict.fromkeys(("RunResult", "TerraVis", "summarize"), ".core"),
    **dict.fromkeys(("Annotation", "score_annotation", "score_annotations"), ".human"),
    **dict.fromkeys(("PromptPack", "load_pack"), ".pack"),
    "record_from_raw_answers": ".saved_runs",
    **dict.fromkeys(("CheckRecord", "ImageRecord", "load_records", "save_records"), ".records"),
    "score_from_counts": ".scoring",
    **dict.fromkeys(("LEVELS", "TAXONOMY", "TYPE_IDS", "ViolationType", "get_type"), ".taxonomy"),
    **dict.fromkeys(("Item", "WorkflowConfig", "reference_records"), ".workflow"),
    **dict.fromkeys(("TerraVisScore", "terravis_score"), ".metric"),
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
