"""`RegenerationSimilarity`: CLIP % and DINO % of regenerations against references as a torchmetrics
Metric, for validation loops (sum-reduced tensor states sync across processes).

The encoders live outside the module tree (a plain holder, not submodules), so they never
enter `state_dict` or a checkpoint; they follow the metric's device on `update`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from vlmjudge.images import to_pil_list

from .similarity import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_DINO_MODEL,
    ClipEncoder,
    DinoEncoder,
    ImageEncoder,
    SimilarityScorer,
)


class _Encoders:
    """Holds the scorer out of torch's module registry (so no weights in state_dict)."""

    def __init__(self, scorer: SimilarityScorer) -> None:
        self.scorer = scorer


class RegenerationSimilarity(Metric):
    """Mean CLIP and DINOv2 image-image cosine (in %) between regenerations and their references.

    `update(references, generated)` takes two equal-length batches of images (PIL, paths,
    arrays, a BCHW tensor in 0..1 or uint8); `compute()` returns `{"clip": ..., "dino": ...}`.
    Float tensors are quantised to 8-bit RGB like any saved image before encoding.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 100.0

    def __init__(self, clip_model: str | ImageEncoder | None = DEFAULT_CLIP_MODEL,
                 dino_model: str | ImageEncoder | None = DEFAULT_DINO_MODEL, *, pooling: str = "mean",
                 batch_size: int = 32, encoder_dtype: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        clip = ClipEncoder(clip_model, device="cpu", dtype=encoder_dtype, batch_size=batch_size) \
            if isinstance(clip_model, str) else clip_model
        dino = DinoEncoder(dino_model, pooling=pooling, device="cpu", dtype=encoder_dtype, batch_size=batch_size) \
            if isinstance(dino_model, str) else dino_model
        self._holder = _Encoders(SimilarityScorer(clip, dino))
        self.names = tuple(self._holder.scorer.encoders)
        for name in self.names:
            self.add_state(f"{name}_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    @property
    def scorer(self) -> SimilarityScorer:
        return self._holder.scorer

    def update(self, references: Tensor | Sequence[Any], generated: Tensor | Sequence[Any]) -> None:
        refs, gens = to_pil_list(references), to_pil_list(generated)
        if len(refs) != len(gens):
            raise ValueError(f"{len(refs)} references but {len(gens)} generated images")
        for encoder in self.scorer.encoders.values():
            if encoder.device != str(self.device):
                encoder.to(str(self.device))
        scores = self.scorer.score(refs, gens)
        for name in self.names:
            total = torch.tensor(sum(s[name] for s in scores), dtype=torch.float64, device=self.device)
            setattr(self, f"{name}_sum", getattr(self, f"{name}_sum") + total)
        self.count += len(scores)

    def compute(self) -> dict[str, Tensor]:
        if int(self.count) == 0:
            raise ValueError("RegenerationSimilarity.compute() before any update: no image pairs seen")
        return {name: (getattr(self, f"{name}_sum") / self.count).float() for name in self.names}

    def plot(self, val: dict | Sequence[dict] | None = None, ax: Any = None) -> Any:
        """Plot one computed value or a sequence of them (matplotlib figure and axes)."""
        return self._plot(val, ax)
