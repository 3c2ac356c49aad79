"""VQAScore as a `torchmetrics.Metric`: `update(images, prompts)` scores a batch, `compute()` gives
the mean P("Yes") over the images that have a score (NaN before any).

The judge lives in a `ScorerHandle` (never in `state_dict`, shared by copies, left out of
pickles), as in every metric of the suite; states are sums and concatenated per-image scores, so
DDP synchronisation needs nothing special.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from vlmjudge.faces.handle import scorer_handle
from vlmjudge.faces.metric import JudgeMetric, State, batch_value, image_batch
from vlmjudge.stats.interval import mean_keys

from .core import VQAScore, VQAScoreRecord
from .spec import SPEC

__all__ = ["VQAScoreMetric", "vqascore"]

#: The judge loaded when none is given (the one rule of every face).
DEFAULT_MODEL = SPEC.default_model


def _scorer_with(pack: Any, judge: Any) -> VQAScore:
    """A VQAScore scorer with the metric's pack over `judge` (picklable as a partial)."""
    return VQAScore(judge, pack=pack)


class VQAScoreMetric(JudgeMetric):
    """Mean VQAScore of images against their prompts, accumulated over batches.

    Args:
        judge: a `vlmjudge` Judge; or None, and the judge is loaded from the judge arguments below.
        model: the judge to load: a Hub id, a local folder or a server's model name; None:
            Qwen/Qwen3-VL-8B-Instruct.
        backend, revision, device, dtype, cache: as `vlmjudge.load_judge`, for the judge loaded here.
        judge_kwargs: the backend's other options, for the judge loaded here.
        pack: VQAScore's prompt pack (a shipped name, a JSON file or a dict over the default).
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> judge = ReplayJudge({"0": {"probs": {"Yes": 0.75, "No": 0.25}}, "1": {"probs": {"Yes": 0.25, "No": 0.5}}},
        ...                     key_fields=("item_id",))
        >>> metric = VQAScoreMetric(judge)
        >>> metric.update([Image.new("RGB", (32, 32), "red"), Image.new("RGB", (32, 32), "blue")],
        ...               ["a red square", "a red square"])
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
        >>> metric.details()["n_scored"], metric.details()["scores"]
        (2, [0.75, 0.25])
    """

    plot_upper_bound = 1.0
    states = {"score_sum": State("sum", torch.float64), "n_images": State("sum"), "n_scored": State("sum"),
              "n_truncated": State("sum"), "scores": State("cat")}
    score_sum: Tensor
    n_images: Tensor
    n_scored: Tensor
    n_truncated: Tensor
    scores: list[Tensor]

    def __init__(self, judge: Any = None, *, model: str | None = None, backend: str | None = None,
                 revision: str | None = None, device: str | None = None, dtype: str | None = None,
                 cache: Any = None, judge_kwargs: Mapping[str, Any] | None = None, pack: Any = None,
                 **kwargs: Any) -> None:
        handle = scorer_handle(judge, functools.partial(_scorer_with, pack), default_model=DEFAULT_MODEL,
                               where="VQAScoreMetric", model=model, backend=backend, revision=revision,
                               device=device, dtype=dtype, cache=cache, judge_kwargs=judge_kwargs)
        super().__init__(handle, **kwargs)
        #: The records of the most recent `update` (a plain attribute, never synced).
        self.last_records: list[VQAScoreRecord] = []

    def update(self, images: Any, prompts: Sequence[str]) -> None:
        """Score a batch: a BCHW tensor or a list of images, and one prompt per image (a list)."""
        pils = image_batch(images, f"{type(self).__name__}.update")
        if isinstance(prompts, str) or not isinstance(prompts, Sequence):
            raise TypeError(f"prompts must be a list with one prompt per image, got {type(prompts).__name__}")
        if len(prompts) != len(pils):
            raise ValueError(f"{len(pils)} images for {len(prompts)} prompts")
        offset = int(self.n_images)
        records = self.scorer.score(pils, list(prompts), [str(offset + i) for i in range(len(pils))])
        device = self.score_sum.device
        scored = [r.score for r in records if r.score is not None]
        self.score_sum += torch.tensor(math.fsum(scored), dtype=torch.float64, device=device)
        self.n_images += len(records)
        self.n_scored += len(scored)
        self.n_truncated += sum(r.truncated for r in records)
        self.scores.append(torch.tensor([math.nan if r.score is None else r.score for r in records],
                                        dtype=torch.float64, device=device))
        self.last_records = records

    def compute(self) -> Tensor:
        """The mean VQAScore of the scored images; NaN when none was scored."""
        return self.mean_of(self.score_sum, self.n_scored)

    def details(self) -> dict[str, Any]:
        """The mean with its 95% interval and n, counts (images, scored, failed, truncated) and the
        per-image scores in the order seen (None where an image has no score), synced across processes."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            scores = self.cat_values("scores")
            n_images, n_scored = int(self.n_images), int(self.n_scored)
            return {**mean_keys("mean_score", scores), "n_images": n_images, "n_scored": n_scored,
                    "n_failed": n_images - n_scored, "n_truncated": int(self.n_truncated),
                    "scores": [None if math.isnan(s) else s for s in scores]}


def vqascore(images: Any, prompts: Sequence[str], judge: Any, pack: Any = None) -> Tensor:
    """Functional form: the mean VQAScore of one batch, through `VQAScoreMetric`'s own update path.

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> judge = ReplayJudge({"0": {"probs": {"Yes": 0.625, "No": 0.25}}}, key_fields=("item_id",))
        >>> vqascore([Image.new("RGB", (32, 32), "red")], ["a red square"], judge)
        tensor(0.6250, dtype=torch.float64)
    """
    return batch_value(VQAScoreMetric(judge, pack=pack), images, prompts)
