"""VQAScore (Lin et al. 2024) on a vlmjudge judge: the full-vocabulary probability that the judge
answers Yes to whether the image shows the prompt."""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use.
_EXPORTS: dict[str, str] = {
    "VQAScore": ".core",
    "VQAScoreRecord": ".core",
    "VQAScorePack": ".pack",
    "load_pack": ".pack",
    "SPEC": ".spec",
    "VQAScoreMetric": ".metric",
    "vqascore": ".metric",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
