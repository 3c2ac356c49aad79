"""`RegenerationSimilarity`: CLIP % and DINO % of regenerations against references as a torchmetrics
Metric, for validation loops (sum-reduced tensor states sync across processes).

The encoders live outside the module tree (in a `vlmjudge.metric_support.ScorerHandle`, not
submodules), so they never enter `state_dict` or a checkpoint; copies (`clone()`,
`MetricTracker`) share them, and pickling leaves them out: unpickled in the same process the
metric shares the original's encoders, elsewhere it loads them again from their ids (or, if
it was given encoder objects, needs `attach_encoders`). They follow the metric's device on
`update`.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from vlmjudge.images import to_pil_list
from vlmjudge.metric_support import ScorerHandle

from .similarity import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_DINO_MODEL,
    ClipEncoder,
    DinoEncoder,
    ImageEncoder,
    SimilarityScorer,
)


def _load_encoders(clip_model: str | None, dino_model: str | None, pooling: str, batch_size: int,
                   encoder_dtype: str | None) -> SimilarityScorer:
    """The similarity scorer of two encoder ids (None: that encoder left out), on the CPU."""
    clip = None if clip_model is None else ClipEncoder(clip_model, device="cpu", dtype=encoder_dtype,
                                                       batch_size=batch_size)
    dino = None if dino_model is None else DinoEncoder(dino_model, pooling=pooling, device="cpu",
                                                       dtype=encoder_dtype, batch_size=batch_size)
    return SimilarityScorer(clip, dino)


def _scorer_of(clip: ImageEncoder | None, dino: ImageEncoder | None) -> SimilarityScorer:
    return SimilarityScorer(clip, dino)


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
        by_id = all(m is None or isinstance(m, str) for m in (clip_model, dino_model))
        if by_id:
            rebuild = functools.partial(_load_encoders, clip_model, dino_model, pooling, batch_size, encoder_dtype)
            scorer = rebuild()
        else:
            rebuild = None
            clip = ClipEncoder(clip_model, device="cpu", dtype=encoder_dtype, batch_size=batch_size) \
                if isinstance(clip_model, str) else clip_model
            dino = DinoEncoder(dino_model, pooling=pooling, device="cpu", dtype=encoder_dtype,
                               batch_size=batch_size) if isinstance(dino_model, str) else dino_model
            scorer = SimilarityScorer(clip, dino)
        self._handle = ScorerHandle(scorer, rebuild=rebuild, rebind=_scorer_of,
                                    reattach="metric.attach_encoders(clip, dino)")
        self.names = tuple(scorer.encoders)
        for name in self.names:
            self.add_state(f"{name}_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    @property
    def scorer(self) -> SimilarityScorer:
        """The CLIP/DINO scorer (shared by copies of this metric)."""
        return self._handle.scorer

    def attach_encoders(self, clip: ImageEncoder | None, dino: ImageEncoder | None) -> None:
        """Compare with these encoders from now on (the same ones as at construction, by name):
        how a metric built from encoder objects gets them back after unpickling elsewhere."""
        names = tuple(SimilarityScorer(clip, dino).encoders)
        if names != self.names:
            raise ValueError(f"this metric compares with {self.names}, not {names}")
        self._handle.attach(clip, dino)

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
