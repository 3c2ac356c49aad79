"""VIEScore2 as a `torchmetrics.Metric` with a judge: the mean overall score of generated images.

    metric = VIEScore2Score(model="Qwen/Qwen3-VL-8B-Instruct")   # or VIEScore2Score(judge)
    metric.update(images, prompts)            # BCHW tensor (uint8 0..255 or float 0..1) or a list of images
    metric.compute()                          # mean overall 0-10 score (NaN when none was read)
    metric.details()                          # PQ/SC means, parse failures, per-image scores

States are tensors reduced by sum (counts, score sums) or cat (per-image overall scores, NaN
where none was read), so DDP needs nothing special. The judge is held in a plain wrapper
attribute, never a child module: it stays out of `state_dict`, `.to()` and the optimizer,
and copies of the metric share it. A pickled metric carries no judge: unpickled in the same
process it shares the original's, elsewhere it loads one again from `model=` (or needs
`attach_judge`; see `vlmjudge.metric_support.ScorerHandle`).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from vlmjudge.judge import Judge
from vlmjudge.metric_support import image_batch, judge_or_load, scorer_handle

from .grid import DEFAULT_N
from .pipeline import VIEScore2, VIEScore2Record

__all__ = ["VIEScore2Score", "viescore2_score"]


def make_scorer(judge: Judge | None, model: str | None, backend: str, judge_kwargs: Mapping[str, Any] | None,
                **config: Any) -> VIEScore2:
    """A VIEScore2 scorer over a given judge, or over one loaded from `model`."""
    judge = judge_or_load(judge, model, backend, judge_kwargs)
    return VIEScore2(judge, **config)


def _scorer_with(config: Mapping[str, Any], judge: Judge) -> VIEScore2:
    """A VIEScore2 scorer with the metric's options over `judge` (picklable as a partial)."""
    return VIEScore2(judge, **config)


class VIEScore2Score(Metric):
    """Mean VIEScore2 overall score (0-10) of generated images, accumulated over batches.

    Args:
        judge: a `vlmjudge` Judge; or None with `model` (+ `backend`, `judge_kwargs`).
        fields, grid_size, pack: as `viescore2.VIEScore2`; `scorer_kwargs` for its other keywords.
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 10.0

    score_sum: Tensor
    pq_sum: Tensor
    sc_sum: Tensor
    n_images: Tensor
    n_scored: Tensor
    n_pq: Tensor
    n_sc: Tensor
    n_failed: Tensor
    parse_failures: Tensor
    defect_cells: Tensor
    scores: list[Tensor]

    def __init__(self, judge: Judge | None = None, *, model: str | None = None, backend: str = "transformers",
                 judge_kwargs: Mapping[str, Any] | None = None, fields: Any = "pq_sc+split",
                 grid_size: int = DEFAULT_N, pack: Any = None, scorer_kwargs: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        config = {"fields": fields, "grid_size": grid_size, "pack": pack, **dict(scorer_kwargs or {})}
        self._handle = scorer_handle(judge, model, backend, judge_kwargs, functools.partial(_scorer_with, config))
        if not self.scorer.fields.score_keys:
            raise ValueError(f"VIEScore2Score needs scores; fields {self.scorer.fields.key!r} request none")
        #: Records of the most recent `update` (a plain attribute, never synced).
        self.last_records: list[VIEScore2Record] = []
        for name in ("score_sum", "pq_sum", "sc_sum"):
            self.add_state(name, torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        for name in ("n_images", "n_scored", "n_pq", "n_sc", "n_failed", "parse_failures", "defect_cells"):
            self.add_state(name, torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("scores", [], dist_reduce_fx="cat")

    @property
    def scorer(self) -> VIEScore2:
        """The VIEScore2 scorer (its `.judge.stats` count model calls)."""
        return self._handle.scorer

    def attach_judge(self, judge: Judge) -> None:
        """Judge with `judge` from now on (this metric and the copies that share its handle): how
        a metric built around a ready judge gets one back after unpickling in another process."""
        self._handle.attach(judge)

    def update(self, images: Any, prompts: Sequence[str], conditioning: Sequence[Any] | None = None) -> None:
        """Judge a batch (BCHW tensor or list of images) with its prompts and add the records."""
        pils = image_batch(images, f"{type(self).__name__}.update")
        if isinstance(prompts, str):
            raise TypeError("prompts must be a list of strings, one per image")
        with torch.inference_mode():
            records = self.scorer.score(pils, list(prompts), conditioning)
            self._add(records)
        self.last_records = records

    def _add(self, records: Sequence[VIEScore2Record]) -> None:
        device = self.score_sum.device

        def total(values: list[float]) -> Tensor:
            return torch.tensor(math.fsum(values), dtype=torch.float64, device=device)

        scored = [r.overall for r in records if r.overall is not None]
        pq = [r.scores["pq"] for r in records if "pq" in r.scores]
        sc = [r.scores["sc"] for r in records if "sc" in r.scores]
        self.score_sum += total(scored)
        self.pq_sum += total(pq)
        self.sc_sum += total(sc)
        self.n_images += len(records)
        self.n_scored += len(scored)
        self.n_pq += len(pq)
        self.n_sc += len(sc)
        self.n_failed += sum(r.status in ("failed", "error") for r in records)
        self.parse_failures += sum(r.parse_failures for r in records)
        self.defect_cells += sum(len(r.grid) for r in records if r.grid is not None)
        self.scores.append(torch.tensor([math.nan if r.overall is None else r.overall for r in records],
                                        dtype=torch.float64, device=device))

    def compute(self) -> Tensor:
        """Mean overall score over images with a score; NaN when none had one."""
        if int(self.n_scored) == 0:
            return torch.tensor(math.nan, dtype=torch.float64, device=self.score_sum.device)
        return self.score_sum / self.n_scored

    def details(self) -> dict[str, Any]:
        """Counts and means beyond `compute`, synced across processes."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            scores = dim_zero_cat(self.scores).tolist() if isinstance(self.scores, Tensor) or self.scores else []

            def mean(s: Tensor, k: Tensor) -> float | None:
                return float(s / k) if int(k) else None

            return {"mean_score": mean(self.score_sum, self.n_scored), "mean_pq": mean(self.pq_sum, self.n_pq),
                    "mean_sc": mean(self.sc_sum, self.n_sc), "n_images": int(self.n_images),
                    "n_scored": int(self.n_scored), "n_failed": int(self.n_failed),
                    "parse_failures": int(self.parse_failures), "defect_cells": int(self.defect_cells),
                    "scores": [None if math.isnan(s) else s for s in scores]}

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot the mean score (or a sequence of them) against 0-10.

        Example:
            >>> fig, ax = metric.plot()   # doctest: +SKIP
        """
        return self._plot(val, ax)


def viescore2_score(images: Any, prompts: Sequence[str], judge: Judge, conditioning: Sequence[Any] | None = None,
                    **config: Any) -> Tensor:
    """Functional form: the mean overall score of one batch (NaN when none was read)."""
    records = VIEScore2(judge, **config).score(image_batch(images), list(prompts), conditioning)
    scores = [r.overall for r in records if r.overall is not None]
    return torch.tensor(math.fsum(scores) / len(scores) if scores else math.nan, dtype=torch.float64)
