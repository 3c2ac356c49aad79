"""The baselines the four papers compare against, as registered vlmjudge methods.

VQAScore and TIFA ask the same judge as the four methods (so an image's prefix is shared with them);
the trained scorers (CLIPScore, PickScore, HPSv2, ImageReward, LAION-Aesthetic, MUSIQ, LPIPS) run
through their authors' packages, each an optional extra. Every one writes the shared record schema,
so `vlmjudge benchmark`, `compare` and `agreement` read their runs unchanged.
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use.
_EXPORTS: dict[str, str] = {
    "__version__": "vlmjudge",
    "VQAScore": ".vqascore.core",
    "VQAScoreMetric": ".vqascore.metric",
    "Tifa": ".tifa.core",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
