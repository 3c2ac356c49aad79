"""torchmetrics faces of the grid metrics, with tensor states that sync across DDP processes.

``update(preds, target)`` takes predicted grids (``Grid``, ``None`` for a parse failure, or
the judge text) and ground-truth grids (``Grid`` or grid text), or boolean (B, N, N) tensors
for both. Category grids count through their union. Undefined values compute to NaN.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from .grid import DEFAULT_N, CategoryGrids, Grid, parse_grid, parse_output

GridInput = Union[Tensor, Sequence[Union[Grid, CategoryGrids, str, None]]]


def _grid(item: Any, n: int, prediction: bool) -> Grid | None:
    if isinstance(item, CategoryGrids):
        return item.union()
    if isinstance(item, Grid):
        return item
    if isinstance(item, str):
        return parse_output(item, n=n).union if prediction else parse_grid(item, n=n, strict=True)[0]
    if item is None and prediction:
        return None
    raise TypeError(f"expected a Grid, CategoryGrids{', None' if prediction else ''} or text, "
                    f"got {type(item).__name__}")


def to_tensors(grids: GridInput, n: int, prediction: bool) -> tuple[Tensor, Tensor]:
    """(cells (B, n, n) bool, parsed (B,) bool) from grids, texts or a boolean tensor."""
    if isinstance(grids, Tensor):
        if grids.ndim != 3 or grids.shape[1:] != (n, n):
            raise ValueError(f"expected a (B, {n}, {n}) tensor, got {tuple(grids.shape)}")
        return grids.bool(), torch.ones(grids.shape[0], dtype=torch.bool, device=grids.device)
    items = [_grid(g, n, prediction) for g in grids]
    for g in items:
        if g is not None and g.n != n:
            raise ValueError(f"grid of size {g.n} given to a metric with n={n}")
    cells = torch.stack([torch.from_numpy(g.to_array()) if g is not None else torch.zeros(n, n, dtype=torch.bool)
                         for g in items]) if items else torch.zeros(0, n, n, dtype=torch.bool)
    return cells, torch.tensor([g is not None for g in items], dtype=torch.bool)


class _GridMetric(Metric):
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, n: int = DEFAULT_N, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        Grid(n=n)  # validates n
        self.n = n
        self.add_state("parse_failures", default=torch.tensor(0), dist_reduce_fx="sum")

    def _inputs(self, preds: GridInput, target: GridInput) -> tuple[Tensor, Tensor, Tensor]:
        pred, parsed = to_tensors(preds, self.n, prediction=True)
        truth, _ = to_tensors(target, self.n, prediction=False)
        if pred.shape[0] != truth.shape[0]:
            raise ValueError(f"{pred.shape[0]} predictions but {truth.shape[0]} targets")
        pred, parsed, truth = pred.to(self.device), parsed.to(self.device), truth.to(self.device)
        self.parse_failures += (~parsed).sum()
        return pred & parsed[:, None, None], parsed, truth

    def plot(self, val: Optional[Union[Tensor, Sequence[Tensor]]] = None, ax: Any = None) -> Any:
        """Plot one computed value or a sequence of them (matplotlib figure and axes)."""
        return self._plot(val, ax)


class GridF1(_GridMetric):
    """Micro cell-level F1 = 2TP / (2TP + FP + FN), pooled over images; failures miss every target cell."""

    def __init__(self, n: int = DEFAULT_N, **kwargs: Any) -> None:
        super().__init__(n, **kwargs)
        for name in ("tp", "fp", "fn"):
            self.add_state(name, default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds: GridInput, target: GridInput) -> None:
        """Pool cell counts of a batch."""
        pred, _, truth = self._inputs(preds, target)
        self.tp += (pred & truth).sum()
        self.fp += (pred & ~truth).sum()
        self.fn += (~pred & truth).sum()

    def compute(self) -> Tensor:
        """Micro F1 (NaN when there is no cell at all)."""
        den = 2 * self.tp + self.fp + self.fn
        return (2 * self.tp / den).float() if den > 0 else torch.tensor(float("nan"), device=self.device)


class GridIoU(_GridMetric):
    """Mean per-image grid IoU over images with a non-empty ground truth; failures score 0."""

    def __init__(self, n: int = DEFAULT_N, **kwargs: Any) -> None:
        super().__init__(n, **kwargs)
        self.add_state("ious", default=[], dist_reduce_fx="cat")
        self.add_state("clean_images", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("false_alarms", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds: GridInput, target: GridInput) -> None:
        """Record per-image IoU for defective images and false alarms on clean ones."""
        pred, _, truth = self._inputs(preds, target)
        inter = (pred & truth).flatten(1).sum(1)
        union = (pred | truth).flatten(1).sum(1)
        defective = truth.flatten(1).any(1)
        self.ious.append((inter[defective].double() / union[defective].double()))
        self.clean_images += (~defective).sum()
        self.false_alarms += (~defective & pred.flatten(1).any(1)).sum()

    def compute(self) -> Tensor:
        """Mean IoU (NaN when no image has a defect)."""
        ious = dim_zero_cat(self.ious) if isinstance(self.ious, Tensor) or self.ious else torch.zeros(0)
        return ious.mean().float() if ious.numel() else torch.tensor(float("nan"), device=self.device)
