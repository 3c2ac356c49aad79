"""FAGER as a `torchmetrics.Metric`: `update(images, prompts)` scores a batch with the pipeline,
`compute()` gives the mean overall score (0-100) over the images that could be scored.

The pipeline (and its judges) lives in a `vlmjudge.metric_support.ScorerHandle`, outside the
metric's state: it is never in `state_dict`, copies (`clone()`, `MetricTracker`) share it
rather than copying a model, and pickling leaves it out (unpickled in the same process the
metric shares the original's pipeline; elsewhere `attach_judge` gives it a judge again). The
states are tensors with declared reductions, so the metric syncs across processes like any
other: the score sum and counts add up, the per-image scores concatenate.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from vlmjudge.images import to_pil_list
from vlmjudge.metric_support import ScorerHandle

from fager.pipeline import Fager
from fager.schema import Verdict


def _pipeline_with(references: Any, pipeline_kwargs: dict[str, Any], judge: Any, text_judge: Any = None) -> Fager:
    """A FAGER pipeline with the metric's options over `judge` (picklable as a partial)."""
    return Fager(judge, text_judge, references=references, **pipeline_kwargs)


class FagerScore(Metric):
    """Mean FAGER overall score over the images seen; images without a score are counted apart."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 100.0

    score_sum: torch.Tensor
    scored: torch.Tensor
    unscored: torch.Tensor
    parse_failures: torch.Tensor
    scores: list[torch.Tensor]

    def __init__(self, judge: Any = None, text_judge: Any = None, *, fager: Fager | None = None,
                 qa_sets: Any = None, references: Any = None, pipeline_kwargs: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        reattach = "metric.attach_judge(judge, text_judge=None)"
        if fager is None:
            if judge is None:
                raise ValueError("FagerScore needs a judge (or a ready Fager pipeline via fager=)")
            rebind = functools.partial(_pipeline_with, references, dict(pipeline_kwargs or {}))
            self._handle = ScorerHandle(rebind(judge, text_judge), rebind=rebind, reattach=reattach)
        else:
            self._handle = ScorerHandle(fager, reattach="a new FagerScore(fager=...)")
        self._qa_sets = qa_sets
        self.last_verdicts: list[Verdict] = []
        self.add_state("score_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("scored", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("unscored", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("parse_failures", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("scores", [], dist_reduce_fx="cat")

    @property
    def fager(self) -> Fager:
        """The pipeline that scores each batch."""
        return self._handle.scorer

    def attach_judge(self, judge: Any, text_judge: Any = None) -> None:
        """Score with `judge` (and `text_judge` for the text agents) from now on, this metric and
        the copies sharing its handle: how an unpickled metric gets its judge back."""
        self._handle.attach(judge, text_judge)

    def update(self, images: Any, prompts: Sequence[str], ids: Sequence[Any] | None = None,
               qa_sets: Any = None) -> None:
        """Score a batch: images as a list (paths, PIL, arrays) or a BCHW tensor, one prompt each."""
        pils = to_pil_list(images)
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        if len(pils) != len(prompts):
            raise ValueError(f"{len(pils)} images for {len(prompts)} prompts")
        verdicts = self.fager.score(pils, prompts, qa_sets=qa_sets if qa_sets is not None else self._qa_sets,
                                    ids=ids)
        self.last_verdicts = verdicts
        values = [v.overall_score for v in verdicts if v.overall_score is not None]
        self.score_sum += torch.tensor(sum(values), dtype=torch.float64, device=self.score_sum.device)
        self.scored += len(values)
        self.unscored += len(verdicts) - len(values)
        self.parse_failures += sum(v.counts.failed for v in verdicts)
        if values:
            self.scores.append(torch.tensor(values, dtype=torch.float64, device=self.score_sum.device))

    def compute(self) -> torch.Tensor:
        """Mean overall score of the scored images; NaN when none could be scored."""
        if int(self.scored) == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.score_sum / self.scored

    def per_image(self) -> torch.Tensor:
        """Every scored image's overall score in update order, gathered across processes under
        DDP (rank 0's first) like `compute()`; unscored images are left out."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            if isinstance(self.scores, list) and not self.scores:
                return torch.zeros(0, dtype=torch.float64, device=self.score_sum.device)
            return dim_zero_cat(self.scores).clone()

    def plot(self, val: Any = None, ax: Any = None):
        """Plot the current (or given) value(s), torchmetrics style."""
        return self._plot(val, ax)


__all__ = ["FagerScore"]
