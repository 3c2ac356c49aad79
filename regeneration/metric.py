"""`RegenerationSimilarity`: CLIP % and DINO % of regenerations against references as a torchmetrics
Metric, for validation loops (sum-reduced tensor states sync across processes).

The encoders live outside the module tree (in a `vlmjudge.faces.ScorerHandle`, not
submodules), so they never enter `state_dict` or a checkpoint; copies (`clone()`,
`MetricTracker`) share them, and pickling leaves them out: unpickled in the same process the
metric shares the original's encoders, elsewhere it loads them again from their ids (or, if
it was given encoder objects, needs `attach_encoders`). They follow the metric's device on
`update`. `compute()` before any update is NaN for each encoder (with torchmetrics' warning),
as for every metric of the suite.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from vlmjudge.faces.handle import ScorerHandle
from vlmjudge.faces.metric import JudgeMetric, State, batch_value
from vlmjudge.images import to_pil_list
from vlmjudge.stats.interval import mean_keys

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


__all__ = ["RegenerationSimilarity", "regeneration_similarity"]


class RegenerationSimilarity(JudgeMetric):
    """Mean CLIP and DINOv2 image-image cosine (in %) between regenerations and their references.

    `update(references, generated)` takes two equal-length batches of images (PIL, paths,
    arrays, a BCHW tensor in 0..1 or uint8); `compute()` returns `{"clip": ..., "dino": ...}` and
    `details()` the same means with their 95% intervals and n (`clip_ci`, `clip_n`, ...).
    Float tensors are quantised to 8-bit RGB like any saved image before encoding. An encoder
    given as None is left out of the result (its sum state stays 0).

    Args:
        clip_model: the CLIP model: a Hub id or folder (loaded on the CPU; the metric moves with
            `.to(device)`), a loaded encoder, or None for no CLIP %.
        dino_model: the DINOv2 model, the same way.
        pooling: how DINOv2 features are pooled: "mean" (the public release) or "cls".
        batch_size: images per encoder pass.
        encoder_dtype: the encoders' dtype ("float32", "bfloat16", ...); None: float32.
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).

    Examples:
        Tiny random encoders built offline stand in for the real ones:

        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2
        >>> folder = tempfile.mkdtemp()
        >>> metric = RegenerationSimilarity(build_tiny_clip(folder + "/clip"), build_tiny_dinov2(folder + "/dino"))
        >>> red = Image.new("RGB", (64, 64), (200, 30, 30))
        >>> metric.update([red], [red])
        >>> {name: round(float(value), 3) for name, value in metric.compute().items()}
        {'clip': 100.0, 'dino': 100.0}
        >>> metric.clone().scorer is metric.scorer   # copies share the encoders
        True
    """

    plot_upper_bound = 100.0

    states = {"clip_sum": State("sum", torch.float64), "dino_sum": State("sum", torch.float64),
              "count": State("sum"), "clip_values": State("cat"), "dino_values": State("cat")}
    clip_sum: Tensor
    dino_sum: Tensor
    count: Tensor
    clip_values: list[Tensor]
    dino_values: list[Tensor]

    def __init__(self, clip_model: str | ImageEncoder | None = DEFAULT_CLIP_MODEL,
                 dino_model: str | ImageEncoder | None = DEFAULT_DINO_MODEL, *, pooling: str = "mean",
                 batch_size: int = 32, encoder_dtype: str | None = None, **kwargs: Any) -> None:
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
        super().__init__(ScorerHandle(scorer, rebuild=rebuild, rebind=_scorer_of,
                                      reattach="metric.attach_encoders(clip, dino)"), **kwargs)
        self.names = tuple(scorer.encoders)

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

    def attach_judge(self, *judges: Any) -> None:
        raise TypeError("RegenerationSimilarity compares with encoders, not a judge: use attach_encoders(clip, dino)")

    def update(self, references: Tensor | Sequence[Any], generated: Tensor | Sequence[Any]) -> None:
        """Add a batch of (reference, regenerated) pairs."""
        refs, gens = to_pil_list(references), to_pil_list(generated)
        if len(refs) != len(gens):
            raise ValueError(f"{len(refs)} references but {len(gens)} generated images")
        for encoder in self.scorer.encoders.values():
            if encoder.device != str(self.device):
                encoder.to(str(self.device))
        scores = self.scorer.score(refs, gens)
        for name in self.names:  # the sum for compute(), each pair's value for details()' interval
            values = torch.tensor([s[name] for s in scores], dtype=torch.float64, device=self.device)
            setattr(self, f"{name}_sum", getattr(self, f"{name}_sum") + values.sum())
            getattr(self, f"{name}_values").append(values)
        self.count += len(scores)

    def compute(self) -> dict[str, Tensor]:
        """`{"clip": mean %, "dino": mean %}` over the pairs seen (NaN for each before any pair)."""
        sums = {"clip": self.clip_sum, "dino": self.dino_sum}
        return {name: self.mean_of(sums[name], self.count).float() for name in self.names}

    def details(self) -> dict[str, Any]:
        """Each encoder's mean % with its 95% interval and n over the pairs seen (`clip`, `clip_ci`,
        `clip_n`, then `dino`, ...), synced across processes like `compute()`."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            out: dict[str, Any] = {}
            for name in self.names:
                out.update(mean_keys(name, self.cat_values(f"{name}_values")))
            return out


def regeneration_similarity(references: Any, generated: Any, clip: ImageEncoder | str | None = DEFAULT_CLIP_MODEL,
                            dino: ImageEncoder | str | None = DEFAULT_DINO_MODEL, **options: Any) -> dict[str, Tensor]:
    """Functional form: mean CLIP % and DINO % of one batch of pairs, through
    `RegenerationSimilarity`'s own update path (`options`: pooling, batch_size, encoder_dtype).

    Examples:
        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_clip
        >>> red = Image.new("RGB", (64, 64), (200, 30, 30))
        >>> value = regeneration_similarity([red], [red], build_tiny_clip(tempfile.mkdtemp() + "/clip"), None)
        >>> sorted(value), round(float(value["clip"]), 3)
        (['clip'], 100.0)
    """
    return batch_value(RegenerationSimilarity(clip, dino, **options), references, generated)
