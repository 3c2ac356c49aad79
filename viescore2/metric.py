"""VIEScore2's torchmetrics Metrics: `VIEScore2Score` (with a judge: the mean overall score of
generated images) and the judge-free grid metrics `GridF1` and `GridIoU` (predicted defect
grids against ground truth).

They let a training or evaluation loop use VIEScore2 like any torchmetrics metric: tensor
states that sync across processes, and a judge kept outside the module tree (never in
`state_dict`, shared by copies, left out of pickles).

docs/methods/viescore2.md, "The metrics", shows the use and the state, copy and pickling rules.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Optional, Sequence, Union

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from vlmjudge.faces.handle import scorer_handle
from vlmjudge.faces.loading import judge_or_load
from vlmjudge.faces.metric import JudgeMetric, State, batch_value, image_batch
from vlmjudge.judge import Judge
from vlmjudge.stats.interval import mean_keys

from .core import VIEScore2
from .grid import DEFAULT_N, CategoryGrids, Grid
from .parsing import parse_grid, parse_output
from .records import VIEScore2Record
from .spec import SPEC

__all__ = ["VIEScore2Score", "viescore2_score", "GridF1", "GridIoU"]

#: The method's default judge, loaded when no model is given (the one rule of every face).
DEFAULT_MODEL = SPEC.default_model


def make_scorer(judge: Judge | None = None, **config: Any) -> VIEScore2:
    """A VIEScore2 scorer over a given judge, or over one loaded from the judge arguments in
    `config` (`model`, `backend`, `revision`, `device`, `dtype`, `cache`, `judge_kwargs`; no
    model: the method's default model); the rest of `config` goes to `VIEScore2`.

    Examples:
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> scorer = make_scorer(ReplayJudge({}), fields="overall+grid", grid_size=8)
        >>> type(scorer).__name__, scorer.fields.key, scorer.grid_size
        ('VIEScore2', 'overall+grid', 8)
    """
    names = ("model", "backend", "revision", "device", "dtype", "cache", "judge_kwargs")
    judge_args = {k: config.pop(k) for k in names if k in config}
    judge = judge_or_load(judge, DEFAULT_MODEL, where="VIEScore2", **judge_args)
    return VIEScore2(judge, **config)


def _scorer_with(config: Mapping[str, Any], judge: Judge) -> VIEScore2:
    """A VIEScore2 scorer with the metric's options over `judge` (picklable as a partial)."""
    return VIEScore2(judge, **config)


class VIEScore2Score(JudgeMetric):
    """Mean VIEScore2 overall score (0-10) of generated images, accumulated over batches.

    Args:
        judge: a `vlmjudge` Judge; or None, and the judge is loaded from the judge arguments below.
        model: the judge to load: a Hub id, a local folder or a server's model name; None: the
            method's default model, Qwen/Qwen3-VL-8B-Instruct.
        backend, revision, device, dtype, cache: as `vlmjudge.load_judge`, for the judge loaded here.
        judge_kwargs: the backend's other options, for the judge loaded here.
        fields, grid_size, pack: as `viescore2.VIEScore2`.
        scorer_kwargs: `viescore2.VIEScore2`'s other keywords.
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).

    Examples:
        A tiny random judge built offline stands in for a real one; constrained decoding
        makes even its answers readable:

        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_vlm
        >>> metric = VIEScore2Score(model=build_tiny_vlm(tempfile.mkdtemp() + "/vlm"), device="cpu",
        ...                         fields="overall")
        >>> metric.update([Image.new("RGB", (32, 32), "red")], ["a red square"])
        >>> 0.0 <= float(metric.compute()) <= 10.0, metric.details()["n_scored"]
        (True, 1)
        >>> metric.clone().scorer is metric.scorer
        True
    """

    plot_upper_bound = 10.0

    states = {"score_sum": State("sum", torch.float64),
              **{name: State("sum") for name in ("n_images", "n_scored", "n_failed",
                                                 "parse_failures", "defect_cells")},
              **{name: State("cat") for name in ("scores", "pq_scores", "sc_scores")}}
    score_sum: Tensor
    n_images: Tensor
    n_scored: Tensor
    n_failed: Tensor
    parse_failures: Tensor
    defect_cells: Tensor
    scores: list[Tensor]
    pq_scores: list[Tensor]
    sc_scores: list[Tensor]

    def __init__(self, judge: Judge | None = None, *, model: str | None = None, backend: str | None = None,
                 revision: str | None = None, device: str | None = None, dtype: str | None = None,
                 cache: Any = None, judge_kwargs: Mapping[str, Any] | None = None, fields: Any = "pq_sc+split",
                 grid_size: int = DEFAULT_N, pack: Any = None, scorer_kwargs: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        args = dict(model=model, backend=backend, revision=revision, device=device, dtype=dtype, cache=cache,
                    judge_kwargs=judge_kwargs)
        config = {"fields": fields, "grid_size": grid_size, "pack": pack, **dict(scorer_kwargs or {})}
        handle = scorer_handle(judge, functools.partial(_scorer_with, config), default_model=DEFAULT_MODEL,
                               where="VIEScore2Score", **args)
        super().__init__(handle, **kwargs)
        if not self.scorer.fields.score_keys:
            raise ValueError(f"VIEScore2Score needs scores; fields {self.scorer.fields.key!r} request none")
        #: Records of the most recent `update` (a plain attribute, never synced).
        self.last_records: list[VIEScore2Record] = []

    @property
    def scorer(self) -> VIEScore2:
        """The VIEScore2 scorer (its `.judge.stats` count model calls)."""
        return self._handle.scorer

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
        self.n_images += len(records)
        self.n_scored += len(scored)
        self.n_failed += sum(r.read_status in ("failed", "error") for r in records)
        self.parse_failures += sum(r.parse_failures for r in records)
        self.defect_cells += sum(len(r.grid) for r in records if r.grid is not None)
        self.scores.append(torch.tensor([math.nan if r.overall is None else r.overall for r in records],
                                        dtype=torch.float64, device=device))
        for state, values in ((self.pq_scores, pq), (self.sc_scores, sc)):  # what the PQ and SC means average
            if values:
                state.append(torch.tensor(values, dtype=torch.float64, device=device))

    def compute(self) -> Tensor:
        """Mean overall score over images with a score; NaN when none had one."""
        return self.mean_of(self.score_sum, self.n_scored)

    def details(self) -> dict[str, Any]:
        """Counts and means beyond `compute`, synced across processes; each mean (overall, PQ, SC)
        with its 95% interval and n beside it (`mean_pq_ci`, `mean_pq_n`, ...)."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            scores = self.cat_values("scores")
            return {**mean_keys("mean_score", scores), **mean_keys("mean_pq", self.cat_values("pq_scores")),
                    **mean_keys("mean_sc", self.cat_values("sc_scores")), "n_images": int(self.n_images),
                    "n_scored": int(self.n_scored), "n_failed": int(self.n_failed),
                    "parse_failures": int(self.parse_failures), "defect_cells": int(self.defect_cells),
                    "scores": [None if math.isnan(s) else s for s in scores]}


def viescore2_score(images: Any, prompts: Sequence[str], judge: Judge, conditioning: Sequence[Any] | None = None,
                    **config: Any) -> Tensor:
    """Functional form: the mean overall score of one batch (NaN when none was read), through
    `VIEScore2Score`'s own update path; `config` as its scorer options (fields, grid_size, pack).

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.testing.examples import tiny_judge
        >>> value = viescore2_score([Image.new("RGB", (32, 32), "red")], ["a red square"], tiny_judge(),
        ...                         fields="overall")
        >>> 0.0 <= float(value) <= 10.0
        True
    """
    known = {k: config.pop(k) for k in ("fields", "grid_size", "pack") if k in config}
    return batch_value(VIEScore2Score(judge, **known, scorer_kwargs=config), images, prompts, conditioning)


# -- the grid metrics: predicted defect grids against ground truth, no judge -------------------------

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
    """(cells (B, n, n) bool, parsed (B,) bool) from grids, texts or a boolean tensor.

    Examples:
        >>> cells, parsed = to_tensors(["r1: 1,2", "garbled"], 4, prediction=True)
        >>> tuple(cells.shape), int(cells[0].sum()), parsed.tolist()
        ((2, 4, 4), 2, [True, False])
    """
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
    """Micro cell-level F1 = 2TP / (2TP + FP + FN), pooled over images; failures miss every target cell.

    Examples:
        >>> metric = GridF1()
        >>> metric.update(["score: 4/10\\nr1: 1,2", "no idea"], ["r1: 1,2,3", "r5: 5"])
        >>> round(float(metric.compute()), 4)   # TP 2, FP 0, FN 2 (the unreadable answer misses r5)
        0.6667
        >>> int(metric.parse_failures)
        1
    """

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
    """Mean per-image grid IoU over images with a non-empty ground truth; failures score 0.

    Examples:
        >>> metric = GridIoU()
        >>> metric.update(["score: 4/10\\nr1: 1,2", "score: 9/10\\nr2: 2"], ["r1: 1,2,3", "none"])
        >>> round(float(metric.compute()), 4), int(metric.false_alarms)   # IoU 2/3; a mark on a clean image
        (0.6667, 1)
    """

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
