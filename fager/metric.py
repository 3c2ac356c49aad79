"""FAGER as a `torchmetrics.Metric`: `update(images, prompts)` scores a batch with the pipeline,
`compute()` gives the mean overall score (0-100) over the images that could be scored.

It lets a training or evaluation loop use FAGER like any torchmetrics metric: tensor states
that sync across processes, and the pipeline with its judges kept in a `ScorerHandle` outside
the state (never in `state_dict`, shared by copies, left out of pickles).

docs/methods/fager.md, "The metric", shows the use and the copy and pickling rules.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from vlmjudge.faces.handle import ScorerHandle, scorer_handle
from vlmjudge.faces.loading import judge_or_load
from vlmjudge.faces.metric import JudgeMetric, State, batch_value
from vlmjudge.images import to_pil_list
from vlmjudge.stats.interval import mean_keys

from .core import Fager
from .records import Verdict
from .spec import SPEC

__all__ = ["FagerScore", "fager_score"]

#: The question levels whose per-image scores `details()` averages.
LEVELS = ("level_1", "level_2", "level_3")
#: The method's default judge, loaded when no judge, model or pipeline is given.
DEFAULT_MODEL = SPEC.default_model


def _pipeline_with(references: Any, pipeline_kwargs: dict[str, Any], judge: Any, text_judge: Any = None) -> Fager:
    """A FAGER pipeline with the metric's options over `judge` (picklable as a partial)."""
    return Fager(judge, text_judge, references=references, **pipeline_kwargs)


class FagerScore(JudgeMetric):
    """Mean FAGER overall score over the images seen; images without a score are counted apart.

    Args:
        judge: a `vlmjudge` Judge; or None, and the judge is loaded from the judge arguments below.
        model: the judge to load: a Hub id, a local folder or a server's model name; None: the
            method's default model, Qwen/Qwen3-VL-8B-Instruct.
        backend, revision, device, dtype, cache: as `vlmjudge.load_judge`, for the judge loaded here.
        judge_kwargs: the backend's other options, for the judge loaded here.
        text_judge: a separate judge for the text agents (default: `judge`).
        fager: a ready `fager.Fager` pipeline instead of the judge arguments.
        qa_sets: QA sets used for every update that passes none (no rubric is built then).
        references: as `fager.Fager`.
        pipeline_kwargs: `fager.Fager`'s other keywords.
        kwargs: torchmetrics options (`sync_on_compute`, `compute_on_cpu`, ...).

    Examples:
        A replay judge (recorded answers, keyed by item and question) stands in for a real one;
        a given QA set means that no rubric is built:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> qa = {"prompt": "a red apple", "items": [
        ...     {"question": "Is there an apple?", "level": "level_1", "category": "existence",
        ...      "importance": "high", "source_fact": "an apple"}]}
        >>> judge = ReplayJudge({("apple", 0): '{"answer": "yes", "rationale": "a red apple"}'},
        ...                     key_fields=("item_id", "question_id"))
        >>> metric = FagerScore(judge, qa_sets=[qa])
        >>> metric.update([Image.new("RGB", (32, 32), "red")], ["a red apple"], ids=["apple"])
        >>> float(metric.compute()), int(metric.scored), metric.last_verdicts[0].decision
        (100.0, 1, 'keep')
        >>> metric.clone().fager is metric.fager   # copies share the pipeline and its judge
        True
    """

    plot_upper_bound = 100.0

    states = {"score_sum": State("sum", torch.float64), "scored": State("sum"), "unscored": State("sum"),
              "parse_failures": State("sum"), "scores": State("cat"),
              **{f"{level}_scores": State("cat") for level in LEVELS}}
    score_sum: Tensor
    scored: Tensor
    unscored: Tensor
    parse_failures: Tensor
    scores: list[Tensor]
    level_1_scores: list[Tensor]
    level_2_scores: list[Tensor]
    level_3_scores: list[Tensor]

    def __init__(self, judge: Any = None, text_judge: Any = None, *, fager: Fager | None = None,
                 model: str | None = None, backend: str | None = None, revision: str | None = None,
                 device: str | None = None, dtype: str | None = None, cache: Any = None,
                 judge_kwargs: Mapping[str, Any] | None = None, qa_sets: Any = None, references: Any = None,
                 pipeline_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        args = dict(model=model, backend=backend, revision=revision, device=device, dtype=dtype, cache=cache,
                    judge_kwargs=judge_kwargs)
        if fager is not None:
            if judge is not None or text_judge is not None or any(v is not None for v in args.values()):
                raise ValueError("FagerScore: give a ready pipeline (fager=) or a judge and its options, not both")
            handle = ScorerHandle(fager, reattach="a new FagerScore(fager=...)")
        else:
            rebind = functools.partial(_pipeline_with, references, dict(pipeline_kwargs or {}))
            reattach = "metric.attach_judge(judge, text_judge=None)"
            if text_judge is not None:  # a given text judge: never part of a rebuild recipe (it would pickle)
                judge = judge_or_load(judge, DEFAULT_MODEL, where="FagerScore", **args)
                handle = ScorerHandle(rebind(judge, text_judge), rebind=rebind, reattach=reattach)
            else:
                handle = scorer_handle(judge, rebind, default_model=DEFAULT_MODEL, where="FagerScore", **args)
                handle.reattach = reattach
        super().__init__(handle, **kwargs)
        self._qa_sets = qa_sets
        #: The verdicts of the most recent `update` (a plain attribute, never synced).
        self.last_verdicts: list[Verdict] = []

    @property
    def fager(self) -> Fager:
        """The pipeline that scores each batch."""
        return self.scorer

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
        values = [v.score for v in verdicts if v.score is not None]
        self.score_sum += torch.tensor(sum(values), dtype=torch.float64, device=self.score_sum.device)
        self.scored += len(values)
        self.unscored += len(verdicts) - len(values)
        self.parse_failures += sum(v.counts.failed for v in verdicts)
        if values:
            self.scores.append(torch.tensor(values, dtype=torch.float64, device=self.score_sum.device))
        for level in LEVELS:  # NaN where an image's level had no scored question
            per_image = [getattr(v.level_scores, level) for v in verdicts]
            getattr(self, f"{level}_scores").append(torch.tensor(
                [math.nan if x is None else x for x in per_image], dtype=torch.float64, device=self.score_sum.device))

    def compute(self) -> Tensor:
        """Mean overall score of the scored images; NaN when none could be scored."""
        return self.mean_of(self.score_sum, self.scored)

    def details(self) -> dict[str, Any]:
        """Beyond `compute`, synced across processes: the mean overall score and each level's mean,
        each with its 95% interval and n (`mean_overall_ci`, `mean_overall_n`, `mean_level_1_ci`,
        ...; unscored images left out, as `compute()` leaves them), the image counts, the parse
        failures and the scored images' overall scores in update order."""
        with self.sync_context(should_sync=self.sync_on_compute, dist_sync_fn=self.dist_sync_fn):
            scores = self.cat_values("scores")
            out = mean_keys("mean_overall", scores)
            for level in LEVELS:
                out.update(mean_keys(f"mean_{level}", self.cat_values(f"{level}_scores")))
            return {**out, "n_scored": int(self.scored), "n_unscored": int(self.unscored),
                    "parse_failures": int(self.parse_failures), "scores": scores}

    def per_image(self) -> Tensor:
        """Every scored image's overall score in update order, gathered across processes under
        DDP (rank 0's first) like `compute()`; unscored images are left out."""
        return self.gathered("scores")


def fager_score(images: Any, prompts: Sequence[str], judge: Any, qa_sets: Any = None, text_judge: Any = None,
                **pipeline_kwargs: Any) -> Tensor:
    """Functional form: the mean FAGER overall score of one batch (NaN when no image could be
    scored), through `FagerScore`'s own update path.

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> qa = {"prompt": "a red apple", "items": [
        ...     {"question": "Is there an apple?", "level": "level_1", "category": "existence",
        ...      "importance": "high", "source_fact": "an apple"}]}
        >>> judge = ReplayJudge({("0", 0): '{"answer": "no", "rationale": "a pear"}',
        ...                      ("0", "feedback"): '{"instruction": "paint a red apple"}'},
        ...                     key_fields=("item_id", "question_id"))
        >>> fager_score([Image.new("RGB", (32, 32), "green")], ["a red apple"], judge, qa_sets=[qa])
        tensor(0., dtype=torch.float64)
    """
    metric = FagerScore(judge, text_judge, qa_sets=qa_sets, pipeline_kwargs=pipeline_kwargs)
    return batch_value(metric, images, prompts)
