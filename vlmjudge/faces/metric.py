"""The base of every judge-backed `torchmetrics.Metric`: the judge (or encoders) in a
`ScorerHandle`, states declared once with their reductions, one empty-state rule, and a
functional form that runs the class's own update path.

- Declared states: a subclass lists `states = {name: State(...)}` and annotates each name
  (`score_sum: Tensor`); a state without an annotation is an error when the class is made.
- Empty state: `compute()` before any `update` (or after updates that scored nothing) is NaN;
  before any update torchmetrics also warns, as it does for its own metrics.
- Functional form: `batch_value(metric, *batch)` updates a fresh metric once and computes it
  unsynced, so the functional and the class never disagree on the arithmetic.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

import torch
from torch import Tensor
from torchmetrics import Metric

from ..images import to_pil_list
from .handle import ScorerHandle


@dataclass(frozen=True)
class State:
    """One declared metric state: summed tensors (`shape`, `dtype`) or concatenated lists.

    Examples:
        >>> State("sum", torch.float64).default()
        tensor(0., dtype=torch.float64)
        >>> State("sum", shape=(2,)).default()
        tensor([0, 0])
        >>> State("cat").default()
        []
    """

    reduce: str
    dtype: torch.dtype = torch.long
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.reduce not in ("sum", "cat"):
            raise ValueError(f"a state reduces by 'sum' or 'cat', not {self.reduce!r}")

    def default(self) -> Tensor | list:
        return [] if self.reduce == "cat" else torch.zeros(self.shape, dtype=self.dtype)


def _annotations(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        names.update(getattr(klass, "__annotations__", {}))
    return names


class JudgeMetric(Metric):
    """A Metric whose scorer (a method over a judge, or encoders) sits in a `ScorerHandle`.

    Subclasses declare `states`, build a handle and call `super().__init__(handle, **kwargs)`,
    then implement `update` and `compute` (with `mean_of` for a NaN-safe mean); a `details()`
    puts each mean's 95% interval and n beside it (`vlmjudge.stats.interval.mean_keys` over
    `cat_values` of a per-item state).

    Examples:
        A toy metric whose "scorer" is a function: the mean image width.

        >>> from PIL import Image
        >>> class MeanWidth(JudgeMetric):
        ...     states = {"total": State("sum", torch.float64), "n": State("sum")}
        ...     total: Tensor
        ...     n: Tensor
        ...     def __init__(self, **kwargs):
        ...         super().__init__(ScorerHandle(lambda pils: [p.width for p in pils]), **kwargs)
        ...     def update(self, images):
        ...         widths = self.scorer(image_batch(images))
        ...         self.total += sum(widths)
        ...         self.n += len(widths)
        ...     def compute(self):
        ...         return self.mean_of(self.total, self.n)
        >>> metric = MeanWidth()
        >>> metric.update([Image.new("RGB", (8, 4)), Image.new("RGB", (4, 4))])
        >>> metric.compute()
        tensor(6., dtype=torch.float64)
        >>> metric.clone().scorer is metric.scorer
        True
        >>> batch_value(MeanWidth(), [Image.new("RGB", (2, 2))])
        tensor(2., dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    #: The metric's states by name, each also annotated on the class.
    states: ClassVar[Mapping[str, State]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = sorted(set(cls.states) - _annotations(cls))
        if missing:
            raise TypeError(f"{cls.__name__}: states {missing} are not annotated on the class")

    def __init__(self, handle: ScorerHandle, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(handle, ScorerHandle):
            raise TypeError(f"{type(self).__name__} keeps its scorer in a ScorerHandle, got {type(handle).__name__}")
        self._handle = handle
        for name, state in self.states.items():
            self.add_state(name, state.default(), dist_reduce_fx=state.reduce)

    @property
    def scorer(self) -> Any:
        """The scorer the handle holds (shared by every copy of this metric)."""
        return self._handle.scorer

    def attach_judge(self, *judges: Any) -> None:
        """Score with `judges` from now on (this metric and the copies that share its handle):
        how a metric built around a ready judge gets one back after unpickling elsewhere."""
        self._handle.attach(*judges)

    def mean_of(self, total: Tensor, count: Tensor) -> Tensor:
        """`total / count`, NaN when `count` is 0 (the one empty-state value)."""
        if int(count) == 0:
            return torch.tensor(math.nan, dtype=torch.float64, device=total.device)
        return total.to(torch.float64) / count

    def cat_values(self, name: str) -> list[float]:
        """A concatenated state's values as floats, for `details()` to average with
        `vlmjudge.stats.interval.mean_keys` (inside its sync context: every process's values)."""
        from torchmetrics.utilities.data import dim_zero_cat
        value = getattr(self, name)
        if isinstance(value, list) and not value:
            return []
        return dim_zero_cat(value).tolist()

    def gathered(self, name: str) -> Tensor:
        """A concatenated state as one float64 tensor, synced across processes like `compute()`."""
        from torchmetrics.utilities.data import dim_zero_cat
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            value = getattr(self, name)
            if isinstance(value, list) and not value:
                return torch.zeros(0, dtype=torch.float64, device=self.device)
            return dim_zero_cat(value).clone()

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot the computed value (or a sequence of them, e.g. one per epoch): figure and axes."""
        return self._plot(val, ax)


def batch_value(metric: Metric, *batch: Any, **batch_kwargs: Any) -> Any:
    """The functional form: `metric` (fresh) updated with one batch and computed unsynced."""
    metric.sync_on_compute = False
    metric.update(*batch, **batch_kwargs)
    return metric.compute()


def image_batch(images: Any, who: str = "update") -> list:
    """A batch as RGB PIL images: a BCHW tensor (uint8 0..255 or float 0..1) or a sequence of any
    image inputs; a single image is an error, never silently a batch of rows.

    Examples:
        >>> [im.size for im in image_batch(torch.zeros(2, 3, 4, 5))]
        [(5, 4), (5, 4)]
        >>> image_batch("one.png")
        Traceback (most recent call last):
        TypeError: images must be a BCHW tensor or a list of images (wrap a single image in a list), got str
    """
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
