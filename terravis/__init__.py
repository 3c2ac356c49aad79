"""TerraVis: world-grounded visual consistency of generated images, judged by a multimodal LLM.

Eligibility, 18 independent violation checks, severity of each violation, then
S = exp(-lam (N_major + alpha N_minor)). See `TerraVis` to score and `terravis.analysis`
for the paper's analyses over saved records; `TerraVisScore` (torchmetrics, loaded on first
use) for validation loops, `terravis.report` for rankings, figures and HTML reports.
"""
from __future__ import annotations

from vlmjudge import __version__

from .core import RunResult, TerraVis, summarize
from .human import Annotation, score_annotation, score_annotations
from .pack import PromptPack, load_pack
from .raw_answers import record_from_raw_answers
from .records import CheckRecord, ImageRecord, load_records, save_records
from .scoring import score_from_counts
from .taxonomy import LEVELS, TAXONOMY, TYPE_IDS, ViolationType, get_type
from .workflow import Item, WorkflowConfig, reference_records

__all__ = [
    "__version__", "TerraVis", "RunResult", "summarize", "Annotation", "score_annotation", "score_annotations",
    "PromptPack", "load_pack", "CheckRecord", "ImageRecord", "load_records", "save_records", "score_from_counts",
    "LEVELS", "TAXONOMY", "TYPE_IDS", "ViolationType", "get_type", "Item", "WorkflowConfig", "reference_records",
    "record_from_raw_answers",
]
__all__ += ["TerraVisScore", "terravis_score"]

_LAZY = {"TerraVisScore": "metric", "terravis_score": "metric"}


def __getattr__(name: str):
    """Load the torchmetrics face only when asked for (torchmetrics imports torch)."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'terravis' has no attribute {name!r}")
