"""What every judge-backed `torchmetrics.Metric` needs: the judge kept out of the module
tree, a batch of images read the same way, and a judge given or loaded by name."""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from .images import to_pil_list
from .judge import Judge, load_judge


class ScorerHandle:
    """Holds a scorer (and its model) outside the module tree, so it never enters `state_dict`,
    `.to()` or an optimizer; deep copies (`metric.clone()`, Lightning) share it."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer

    def __deepcopy__(self, memo: dict) -> "ScorerHandle":
        return self

    def __repr__(self) -> str:
        judge = getattr(self.scorer, "judge", None)
        return f"ScorerHandle({getattr(judge, 'backend', '?')}:{getattr(judge, 'model_id', '?')})"


def image_batch(images: Any, who: str = "update") -> list:
    """A batch as RGB PIL images: a BCHW tensor (uint8 0..255 or float 0..1) or a sequence of any
    image inputs; a single image is an error, never silently a batch of rows."""
    import torch
    if isinstance(images, torch.Tensor):
        if images.dim() != 4 or images.shape[1] not in (1, 3, 4):
            raise ValueError(f"{who} takes a BCHW batch tensor (B, C, H, W) with C in 1, 3, 4; "
                             f"got shape {tuple(images.shape)}")
        if images.shape[0] == 0:
            raise ValueError("empty image batch")
        return to_pil_list(images)
    if isinstance(images, (str, bytes, os.PathLike)) or hasattr(images, "convert") \
            or not isinstance(images, Sequence):
        raise TypeError("images must be a BCHW tensor or a list of images (wrap a single image in a list), "
                        f"got {type(images).__name__}")
    if len(images) == 0:
        raise ValueError("empty image batch")
    return to_pil_list(list(images))


def judge_or_load(judge: Judge | None, model: str | None, backend: str,
                  judge_kwargs: Mapping[str, Any] | None) -> Judge:
    """The given judge, or one loaded from `model`; exactly one of the two."""
    if judge is None:
        if model is None:
            raise ValueError("give a judge (vlmjudge.load_judge(...)) or model=<Hub id or local dir>")
        return load_judge(model, backend=backend, **dict(judge_kwargs or {}))
    if model is not None:
        raise ValueError("give either a judge or model=, not both")
    return judge
