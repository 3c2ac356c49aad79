"""The trained scorers the papers compare against, through their authors' packages.

One module per scorer (`clipscore`, `pickscore`, `hps`, `imagereward`, `aesthetic`, `iqa` for MUSIQ,
NIQE and BRISQUE, `lpips`), each with its `SPEC`, which names its extra (`EXTRA`) and the modules it needs
(`REQUIRES`); `base` holds the shared scoring loop and `records` the one record type. A scorer whose
package is missing fails in one line that names the extra to install.
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use, so importing this loads no torch.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("TrainedRecord", "mean_score_statistics"), ".records"),
    **dict.fromkeys(("MissingExtraError", "TrainedScorer"), ".base"),
    "ClipScoreScorer": ".clipscore",
    **dict.fromkeys(("PickScoreScorer", "preference_probs"), ".pickscore"),
    "HPSv2Scorer": ".hps",
    "ImageRewardScorer": ".imagereward",
    "AestheticScorer": ".aesthetic",
    "IQAScorer": ".iqa",
    "LpipsScorer": ".lpips",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
