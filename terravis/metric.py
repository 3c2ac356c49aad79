"""TerraVis as a `torchmetrics.Metric`, for validation loops and DDP.

    metric = TerraVisScore(model="Qwen/Qwen3-VL-8B-Instruct")   # or TerraVisScore(judge)
    metric.update(images)        # uint8 (0..255) or float (0..1) BCHW tensors, or a list of images
    metric.compute()             # mean score over eligible images (NaN when none was eligible)
    metric.details()             # N/A and failure counts, violation counts by level and type

States are tensors reduced by sum (counts, the score sum) or cat (per-image scores, NaN
for N/A), so DDP synchronisation needs nothing special. The judge lives in a plain
wrapper attribute: it is not a child module, so it never enters `state_dict`, `.to()`
or the optimizer, and copies of the metric share it instead of duplicating a model. A
pickled metric carries no judge: unpickled in the same process it shares the original's,
elsewhere it loads one again from `model=` (or needs `attach_judge`, see `ScorerHandle`).
"""
from __future__ import annotations

import functools
import math
import os
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from vlmjudge.judge import Judge
from vlmjudge.metric_support import image_batch, judge_or_load, scorer_handle

from .core import TerraVis
from .prompts import PromptPack
from .records import ImageRecord
from .taxonomy import LEVELS, TYPE_IDS, get_type

__all__ = ["TerraVisScore", "terravis_score"]


def make_scorer(judge: Judge | None, model: str | None, backend: str, judge_kwargs: Mapping[str, Any] | None,
                variant: str, lam: float, alpha: float, pack: Any, scorer_kwargs: Mapping[str, Any] | None) -> TerraVis:
    """A TerraVis scorer over a given judge, or over one loaded from `model`."""
    judge = judge_or_load(judge, model, backend, judge_kwargs)
    return TerraVis(judge, variant=variant, lam=lam, alpha=alpha, pack=pack, **dict(scorer_kwargs or {}))


def _scorer_with(options: Mapping[str, Any], judge: Judge) -> TerraVis:
    """A TerraVis scorer with the metric's options over `judge` (picklable as a partial)."""
    return TerraVis(judge, **options)


class TerraVisScore(Metric):
    """Mean TerraVis score of generated images (eligible images only), accumulated over batches.

    Args:
        judge: a `vlmjudge` Judge; or leave it None and give `model` (+ `backend`, `judge_kwargs`).
        model, backend, judge_kwargs: passed to `vlmjudge.load_judge` when no judge is given.
        variant, lam, alpha, pack: as `terravis.TerraVis`; `scorer_kwargs` for its other keywords.
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    score_sum: Tensor
    n_images: Tensor
    n_scored: Tensor
    n_not_applicable: Tensor
    n_failed: Tensor
    n_major: Tensor
    n_minor: Tensor
    parse_failures: Tensor
    level_counts: Tensor
    type_counts: Tensor
    scores: list[Tensor]

    def __init__(self, judge: Judge | None = None, *, model: str | None = None, backend: str = "transformers",
                 judge_kwargs: Mapping[str, Any] | None = None, variant: str = "workflow", lam: float = 1.0,
                 alpha: float = 0.5, pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None,
                 scorer_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        options = {"variant": variant, "lam": lam, "alpha": alpha, "pack": pack, **dict(scorer_kwargs or {})}
        self._handle = scorer_handle(judge, model, backend, judge_kwargs, functools.partial(_scorer_with, options))
        #: The records of the most recent `update` (plain attribute, not a state: never synced).
        self.last_records: list[ImageRecord] = []
        self.add_state("score_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        for name in ("n_images", "n_scored", "n_not_applicable", "n_failed", "n_major", "n_minor",
                     "parse_failures"):
            self.add_state(name, torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("level_counts", torch.zeros(len(LEVELS), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("type_counts", torch.zeros(len(TYPE_IDS), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("scores", [], dist_reduce_fx="cat")

    @property
    def scorer(self) -> TerraVis:
        """The TerraVis scorer (and through it `.judge`, whose `stats` count model calls)."""
        return self._handle.scorer

    def attach_judge(self, judge: Judge) -> None:
        """Score with `judge` from now on (this metric and the copies that share its handle): how
        a metric built around a ready judge gets one back after unpickling in another process."""
        self._handle.attach(judge)

    def update(self, images: Any) -> None:
        """Score a batch (uint8 or float BCHW tensor, or a list of PIL images/paths) and add it."""
        pils = image_batch(images, f"{type(self).__name__}.update")
        with torch.inference_mode():  # no autograd anywhere, and valid inside Lightning's loops
            records = self.scorer.score(pils)
            self._add(records)
        self.last_records = records

    def _add(self, records: Sequence[ImageRecord]) -> None:
        device = self.score_sum.device
        levels, types = [0] * len(LEVELS), [0] * len(TYPE_IDS)
        for r in records:
            if r.score is None:
                continue
            for t in r.detected_types():
                types[TYPE_IDS.index(t)] += 1
                levels[LEVELS.index(get_type(t).level)] += 1
        scored = [r for r in records if r.score is not None]
        self.score_sum += torch.tensor(math.fsum(r.score for r in scored), dtype=torch.float64, device=device)
        self.n_images += len(records)
        self.n_scored += len(scored)
        self.n_not_applicable += sum(r.status == "not_applicable" for r in records)
        self.n_failed += sum(r.status == "failed" for r in records)
        self.n_major += sum(r.n_major for r in scored)
        self.n_minor += sum(r.n_minor for r in scored)
        self.parse_failures += sum(r.parse_failures for r in records)
        self.level_counts += torch.tensor(levels, dtype=torch.long, device=device)
        self.type_counts += torch.tensor(types, dtype=torch.long, device=device)
        self.scores.append(torch.tensor([math.nan if r.score is None else r.score for r in records],
                                        dtype=torch.float64, device=device))

    def compute(self) -> Tensor:
        """The mean score over eligible, scored images; NaN when none was scored."""
        if int(self.n_scored) == 0:
            return torch.tensor(math.nan, dtype=torch.float64, device=self.score_sum.device)
        return self.score_sum / self.n_scored

    def details(self) -> dict[str, Any]:
        """Everything beyond the mean, synced across processes: image counts (scored, N/A,
        failed), N/A rate, major/minor counts, violation counts and shares by level and type,
        parse failures, and the per-image scores (NaN for N/A) in the order seen."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            n_images = int(self.n_images)
            level = self.level_counts.tolist()
            types = self.type_counts.tolist()
            n_violations = sum(types)
            scores = dim_zero_cat(self.scores).tolist() if isinstance(self.scores, Tensor) or self.scores else []
            out = {
                "mean_score": float(self.score_sum / self.n_scored) if int(self.n_scored) else None,
                "n_images": n_images, "n_scored": int(self.n_scored),
                "n_not_applicable": int(self.n_not_applicable), "n_failed": int(self.n_failed),
                "na_rate": (n_images - int(self.n_scored)) / n_images if n_images else None,
                "n_major": int(self.n_major), "n_minor": int(self.n_minor),
                "parse_failures": int(self.parse_failures),
                "level_counts": dict(zip(LEVELS, level)),
                "level_shares": {lv: (n / n_violations if n_violations else 0.0) for lv, n in zip(LEVELS, level)},
                "type_counts": dict(zip(TYPE_IDS, types)),
                "type_shares": {t: (n / n_violations if n_violations else 0.0) for t, n in zip(TYPE_IDS, types)},
                "scores": [None if math.isnan(s) else s for s in scores],
            }
        return out

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot the mean score (or a sequence of them, e.g. one per epoch) against [0, 1].

        Example:
            >>> fig, ax = metric.plot()          # doctest: +SKIP
            >>> fig, ax = metric.plot(values)    # doctest: +SKIP
        """
        return self._plot(val, ax)


def terravis_score(images: Any, judge: Judge, variant: str = "workflow", lam: float = 1.0,
                   alpha: float = 0.5, pack: Any = None) -> Tensor:
    """Functional form: the mean TerraVis score of one batch (NaN when no image is eligible)."""
    scorer = TerraVis(judge, variant=variant, lam=lam, alpha=alpha, pack=pack)
    scores = [r.score for r in scorer.score(image_batch(images)) if r.score is not None]
    return torch.tensor(math.fsum(scores) / len(scores) if scores else math.nan, dtype=torch.float64)
