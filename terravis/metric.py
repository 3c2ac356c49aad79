"""TerraVis as a `torchmetrics.Metric`, for validation loops and DDP.

    metric = TerraVisScore()     # the default judge; or TerraVisScore(judge), TerraVisScore(model=...)
    metric.update(images)        # uint8 (0..255) or float (0..1) BCHW tensors, or a list of images
    metric.compute()             # mean score over eligible images (NaN when none was eligible)
    metric.details()             # N/A and failure counts, violation counts by level and type

States are tensors reduced by sum (counts, the score sum) or cat (per-image scores, NaN
for N/A), so DDP synchronisation needs nothing special; `compute()` before any update is NaN (with
torchmetrics' warning), as for every metric of the suite. The judge lives in a plain
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

from vlmjudge.faces.handle import scorer_handle
from vlmjudge.faces.loading import judge_or_load
from vlmjudge.faces.metric import JudgeMetric, State, batch_value, image_batch
from vlmjudge.judge import Judge
from vlmjudge.stats.interval import mean_keys

from .core import TerraVis
from .pack import PromptPack
from .records import ImageRecord
from .spec import SPEC
from .taxonomy import LEVELS, TYPE_IDS, get_type

__all__ = ["TerraVisScore", "terravis_score"]

#: The method's default judge, loaded when no model is given (the one rule of every face).
DEFAULT_MODEL = SPEC.default_model


def make_scorer(judge: Judge | None = None, *, variant: str = "workflow", lam: float = 1.0, alpha: float = 0.5,
                pack: Any = None, scorer_kwargs: Mapping[str, Any] | None = None, **judge_args: Any) -> TerraVis:
    """A TerraVis scorer over a given judge, or over one loaded from the judge arguments
    (`model`, `backend`, `revision`, `device`, `dtype`, `cache`, `judge_kwargs`; no model: the
    method's default model).

    Examples:
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> scorer = make_scorer(ReplayJudge({}), alpha=0.25)
        >>> type(scorer).__name__, scorer.alpha, scorer.variant
        ('TerraVis', 0.25, 'workflow')
    """
    judge = judge_or_load(judge, DEFAULT_MODEL, where="TerraVis", **judge_args)
    return TerraVis(judge, variant=variant, lam=lam, alpha=alpha, pack=pack, **dict(scorer_kwargs or {}))


def _scorer_with(options: Mapping[str, Any], judge: Judge) -> TerraVis:
    """A TerraVis scorer with the metric's options over `judge` (picklable as a partial)."""
    return TerraVis(judge, **options)


class TerraVisScore(JudgeMetric):
    """Mean TerraVis score of generated images (eligible images only), accumulated over batches.

    Args:
        judge: a `vlmjudge` Judge; or None, and the judge is loaded from the judge arguments below.
        model: the judge to load: a Hub id, a local folder or a server's model name; None: the
            method's default model, Qwen/Qwen3-VL-8B-Instruct.
        backend, revision, device, dtype, cache: as `vlmjudge.load_judge`, for the judge loaded here.
        judge_kwargs: the backend's other options, for the judge loaded here.
        variant, lam, alpha, pack: as `terravis.TerraVis`.
        scorer_kwargs: `terravis.TerraVis`'s other keywords.
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).

    Examples:
        A tiny random judge built offline stands in for a real one:

        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_vlm
        >>> metric = TerraVisScore(model=build_tiny_vlm(tempfile.mkdtemp() + "/vlm"), device="cpu")
        >>> metric.update([Image.new("RGB", (32, 32), "red"), Image.new("RGB", (32, 32), "navy")])
        >>> details = metric.details()
        >>> details["n_images"], details["n_scored"] + details["n_not_applicable"] + details["n_failed"]
        (2, 2)
        >>> value = metric.compute()
        >>> bool(value.isnan()) or 0.0 <= float(value) <= 1.0
        True
        >>> metric.clone().scorer is metric.scorer   # copies share the judge, never copy it
        True
    """

    plot_upper_bound = 1.0

    states = {"score_sum": State("sum", torch.float64),
              **{name: State("sum") for name in ("n_images", "n_scored", "n_not_applicable", "n_failed",
                                                 "n_major", "n_minor", "parse_failures")},
              "level_counts": State("sum", shape=(len(LEVELS),)),
              "type_counts": State("sum", shape=(len(TYPE_IDS),)),
              "scores": State("cat")}
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

    def __init__(self, judge: Judge | None = None, *, model: str | None = None, backend: str | None = None,
                 revision: str | None = None, device: str | None = None, dtype: str | None = None,
                 cache: Any = None, judge_kwargs: Mapping[str, Any] | None = None, variant: str = "workflow",
                 lam: float = 1.0, alpha: float = 0.5,
                 pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None,
                 scorer_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        args = dict(model=model, backend=backend, revision=revision, device=device, dtype=dtype, cache=cache,
                    judge_kwargs=judge_kwargs)
        options = {"variant": variant, "lam": lam, "alpha": alpha, "pack": pack, **dict(scorer_kwargs or {})}
        handle = scorer_handle(judge, functools.partial(_scorer_with, options), default_model=DEFAULT_MODEL,
                               where="TerraVisScore", **args)
        super().__init__(handle, **kwargs)
        #: The records of the most recent `update` (plain attribute, not a state: never synced).
        self.last_records: list[ImageRecord] = []

    @property
    def scorer(self) -> TerraVis:
        """The TerraVis scorer (and through it `.judge`, whose `stats` count model calls)."""
        return self._handle.scorer

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
        return self.mean_of(self.score_sum, self.n_scored)

    def details(self) -> dict[str, Any]:
        """Everything beyond the mean, synced across processes: the mean score with its 95%
        interval and n (`mean_score_ci`, `mean_score_n`), image counts (scored, N/A, failed),
        N/A rate, major/minor counts, violation counts and shares by level and type, parse
        failures, and the per-image scores (NaN for N/A) in the order seen."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            n_images = int(self.n_images)
            level = self.level_counts.tolist()
            types = self.type_counts.tolist()
            n_violations = sum(types)
            scores = self.cat_values("scores")
            out = {
                **mean_keys("mean_score", scores),  # N/A images (NaN) left out, as compute() leaves them
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


def terravis_score(images: Any, judge: Judge, variant: str = "workflow", lam: float = 1.0,
                   alpha: float = 0.5, pack: Any = None) -> Tensor:
    """Functional form: the mean TerraVis score of one batch (NaN when no image is eligible),
    through `TerraVisScore`'s own update path.

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.testing.examples import tiny_judge
        >>> value = terravis_score([Image.new("RGB", (32, 32), "red")], tiny_judge())
        >>> value.dtype, bool(value.isnan()) or 0.0 <= float(value) <= 1.0
        (torch.float64, True)
    """
    return batch_value(TerraVisScore(judge, variant=variant, lam=lam, alpha=alpha, pack=pack), images)
