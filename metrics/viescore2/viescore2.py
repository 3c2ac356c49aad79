"""VIEScore2 as an `evaluate` metric, in two configurations.

- ``default`` (judge mode): judge images with prompts (and optional conditioning images)
  through `viescore2.VIEScore2`; the judge is configured at load time,
  ``evaluate.load(path, "default", model=..., backend=...)``, and loaded at load time. Images
  are judged when they are added (`add` / `add_batch`) and only their records are stored, so in
  evaluate's multi-process mode each process judges its own shard and `compute()` only aggregates.
- ``evaluation``: judge output texts against ground-truth defect grids and scores through
  `viescore2.evaluation.evaluate_suite`; no model.
"""
import json
import math
from collections import Counter

import datasets
import evaluate

from viescore2.evaluation import Reference, evaluate_suite
from viescore2.grid import DEFAULT_N
from viescore2.instructions import Fields
from viescore2.pipeline import VIEScore2Record
from vlmjudge.distributed import store_scored_rows
from vlmjudge.metric_support import ScoredRowsModule

_CITATION = """\
@misc{viescore2,
  title = {VIEScore2: Unified Image Evaluation with Spatially Grounded Explanations},
}
"""

_DESCRIPTION = """\
VIEScore2 judges a generated image with 0-10 scores (an overall score, or perceptual quality
PQ and semantic consistency SC) and a 16 x 16 grid of defect cells, optionally split into
visual artifacts and semantic misalignments. This module evaluates saved judge outputs:
cell-level micro precision/recall/F1, per-image grid IoU over images with defects, false
alarms on clean images, parse failures, and Spearman correlations (SRCC) of the scores with
their valid-pair counts. The `default` configuration runs the judge itself on images and
prompts and returns the mean overall score with every image's record.
"""

_KWARGS_DESCRIPTION = """
Judge mode (config `default`; load with `model=`, `backend=`, `judge_kwargs=`, `fields=`,
`grid_size=`, `pack=`, or `judge=` a loaded vlmjudge Judge):

Args:
    images (`list` of images): the generated images (PIL images, paths or bytes).
    prompts (`list` of `str`): the generation or editing prompt of each image.
    conditioning (`list` of `list` of images, optional): each image's conditioning images
        (sources or references; shown to the judge before the generated image), `[]` for none.
Returns:
    `score` (mean overall 0-10 score over images with one, None if none), `scores` (per
    image, None where no score was read), `scored`, `parse_failures` (requested fields not
    read, summed), `status_counts`, and `records` (one JSON dict per image: scores, grids,
    explanation, raw `text`, status; the texts can be evaluated with config `evaluation`).

Evaluation mode (config `evaluation`):

Args:
    predictions (`list` of `str`): judge output texts: score lines (`score: 7/10`, or
        `pq: 7/10` and `sc: 5/10`), then grid lines (`r5: 8,9!`) or `none`, with
        `artifact:` and `misalign:` headers when the categories are separate.
    references (`list` of `dict`): one per prediction, with keys `grid` (one grid body in the
        same text format, or None), `artifact` and `misalign` (category bodies, or None),
        `score`, `pq` and `sc` (0-10 targets, or None). Every key must be present; None (or an
        empty string for the grid keys) means that the example has no such ground truth.
    grid_size (`int`, default 16): N of the N x N grid.
Returns:
    A dict with `micro_precision`, `micro_recall`, `micro_f1`, `grid_iou` (and its
    `grid_iou_images`), `tp`, `fp`, `fn`, `clean_images`, `false_alarms`, `clean_correct`,
    `clean_parse_failures`, `parse_failures`, the same prefixed with `artifact_` and
    `misalign_` when references have separate categories, and `srcc_overall`, `srcc_pq`,
    `srcc_sc` with their `_pairs` (valid) and `_total` counts. Undefined values are None.
Examples:
    Evaluation mode, no model:

    >>> metric = evaluate.load("viescore2", "evaluation")
    >>> refs = [{"grid": "r5: 8,9!", "artifact": None, "misalign": None, "score": 3.0, "pq": None, "sc": None},
    ...         {"grid": "none", "artifact": None, "misalign": None, "score": 9.0, "pq": None, "sc": None},
    ...         {"grid": "none", "artifact": None, "misalign": None, "score": 6.0, "pq": None, "sc": None}]
    >>> preds = ["score: 2/10\\nr5: 9", "score: 8/10\\nnone", "score: 5/10\\nnone"]
    >>> out = metric.compute(predictions=preds, references=refs)
    >>> out["micro_f1"], out["grid_iou"], out["false_alarms"], out["srcc_overall"], out["srcc_overall_pairs"]
    (0.6666666666666666, 0.5, 0, 1.0, 3)

    Judge mode, with a tiny random judge built offline standing in for a real one (in
    practice `model="Qwen/Qwen3-VL-8B-Instruct"`); constrained decoding makes even a random
    model's answer readable:

    >>> import tempfile
    >>> from PIL import Image
    >>> from vlmjudge.testing import build_tiny_vlm
    >>> tiny_judge = build_tiny_vlm(tempfile.mkdtemp() + "/tiny-vlm")
    >>> judge_metric = evaluate.load("viescore2", "default", model=tiny_judge, fields="overall",
    ...                              judge_kwargs={"device": "cpu"})
    >>> out = judge_metric.compute(images=[Image.new("RGB", (32, 32), "red")], prompts=["a red square"])
    >>> out["scored"], len(out["records"]), 0.0 <= out["score"] <= 10.0
    (1, 1, True)
"""

CONFIGS = ("evaluation", "default")
#: Keywords of `evaluate.load(..., "default", ...)` that configure the judge and the scorer.
JUDGE_OPTIONS = ("judge", "model", "backend", "judge_kwargs", "fields", "grid_size", "pack", "scorer_kwargs")
#: What judge mode stores per image (its record), instead of the images themselves.
STORED = datasets.Features({"record": datasets.Value("string")})


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VIEScore2(ScoredRowsModule, evaluate.Metric):
    """VIEScore2: judge images (config `default`) or evaluate saved judge outputs (config `evaluation`)."""

    def __init__(self, *args, **kwargs):
        options = {k: kwargs.pop(k) for k in JUDGE_OPTIONS if k in kwargs}
        super().__init__(*args, **kwargs)
        if self.config_name != "default" and options:
            raise ValueError(f"judge options {sorted(options)} apply to config 'default' only, "
                             f"not {self.config_name!r}")
        options.setdefault("fields", "pq_sc+split")
        options["fields"] = Fields.parse(options["fields"])  # a bad configuration fails at load time
        self._options = options
        self._scorer = None
        self._n_added = 0

    def _info(self):
        if self.config_name not in CONFIGS:
            raise KeyError(f"unknown config {self.config_name!r} for viescore2; use 'default' or 'evaluation'")
        if self.config_name == "default":
            # conditioning is optional: the first feature set names what evaluate.combine routes here
            judged = {"images": datasets.Image(), "prompts": datasets.Value("string")}
            features = [datasets.Features(judged),
                        datasets.Features({**judged, "conditioning": datasets.Sequence(datasets.Image())})]
        else:
            grid = datasets.Value("string")
            score = datasets.Value("float64")
            features = datasets.Features({
                "predictions": datasets.Value("string"),
                "references": {"grid": grid, "artifact": grid, "misalign": grid,
                               "score": score, "pq": score, "sc": score},
            })
        return evaluate.MetricInfo(description=_DESCRIPTION, citation=_CITATION,
                                   inputs_description=_KWARGS_DESCRIPTION, features=features)

    def _enforce_nested_string_type(self, schema, obj):
        # evaluate rejects None for string features; a null grid means "no localization target"
        if obj is None:
            return None
        return super()._enforce_nested_string_type(schema, obj)

    def _download_and_prepare(self, dl_manager):
        """Judge mode: load the judge once, at `evaluate.load` time."""
        if self.config_name == "default":
            self.scorer()

    def stored_features(self):
        """Judge mode stores one record per image; the evaluation config stores its inputs."""
        return STORED if self.config_name == "default" else None

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Judge mode: judge the images now and store their records (`conditioning` optional).
        Evaluation mode: as evaluate's."""
        if self.config_name != "default":
            return super().add_batch(predictions=predictions, references=references, **kwargs)
        if predictions is not None or references is not None:
            raise ValueError("config 'default' takes images=, prompts= (and conditioning=), not predictions/references")
        unknown = sorted(set(kwargs) - {"images", "prompts", "conditioning"})
        if unknown:
            raise ValueError(f"config 'default' got unknown inputs {unknown}")
        images, prompts, conditioning = kwargs.get("images"), kwargs.get("prompts"), kwargs.get("conditioning")
        if images is None or prompts is None:
            raise ValueError("config 'default' needs images=[...] and prompts=[...]")
        if conditioning is not None:
            conditioning = [list(c or []) for c in conditioning]
        prefix = "" if self.num_process == 1 else f"{self.process_id}:"
        n = len(images) if hasattr(images, "__len__") and not isinstance(images, (str, bytes)) else 0
        ids = [f"{prefix}{self._n_added + i}" for i in range(n)]
        result = self.scorer().run(images, prompts, conditioning, ids=ids or None)
        self._n_added += len(result.records)
        rows = {"record": [json.dumps(r.to_json(), ensure_ascii=False) for r in result.records]}
        store_scored_rows(self, STORED, rows)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Judge mode: judge one image (`image=`, `prompt=`, optional `conditioning=`) now.
        Evaluation mode: as evaluate's."""
        if self.config_name != "default":
            return super().add(prediction=prediction, reference=reference, **kwargs)
        image, prompt = _one(kwargs, "image"), _one(kwargs, "prompt")  # or by feature name (evaluate.combine)
        if image is None or prompt is None or kwargs.keys() - {"conditioning"}:
            raise ValueError("config 'default' add takes image=, prompt= and optional conditioning=")
        self.add_batch(images=[image], prompts=[prompt], conditioning=[kwargs.get("conditioning") or []])

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Judge mode: judge any images given here, then aggregate every stored record (all processes)."""
        if self.config_name != "default":
            return super().compute(predictions=predictions, references=references, **kwargs)
        inputs = {k: kwargs.pop(k) for k in ("images", "prompts", "conditioning") if k in kwargs}
        if any(v is not None for v in inputs.values()) or predictions is not None or references is not None:
            self.add_batch(predictions=predictions, references=references, **inputs)
        if self.writer is None and self.num_process == 1:
            raise ValueError("no images to aggregate: pass images= and prompts= or call add/add_batch first")
        return self.compute_stored(**kwargs)

    def scorer(self):
        """The VIEScore2 scorer, with its judge loaded on first use."""
        if self._scorer is None:
            from viescore2.metric import make_scorer
            o = dict(self._options)
            self._scorer = make_scorer(o.pop("judge", None), **o.pop("scorer_kwargs", {}), **o)
        return self._scorer

    def _compute(self, predictions=None, references=None, record=None, grid_size=DEFAULT_N):
        if self.config_name == "default":
            return self._aggregate([VIEScore2Record.from_json(json.loads(r)) for r in record])
        refs = [Reference.from_record(r, n=grid_size) for r in references]
        return evaluate_suite(predictions, refs, n=grid_size)

    def _aggregate(self, records):
        scores = [r.overall for r in records]
        read = [s for s in scores if s is not None]
        return {"score": math.fsum(read) / len(read) if read else None, "scores": scores, "scored": len(read),
                "parse_failures": sum(r.parse_failures for r in records),
                "status_counts": dict(Counter(r.status for r in records)),
                "records": [r.to_json() for r in records], "manifest": self.scorer().manifest()}


def _one(kwargs, name):
    """Pop the one example of `add` given as `name=` or by its feature name `names=` (not both)."""
    singular, feature_named = kwargs.pop(name, None), kwargs.pop(name + "s", None)
    if singular is not None and feature_named is not None:
        raise ValueError(f"give {name}= or {name}s=, not both")
    return singular if singular is not None else feature_named
