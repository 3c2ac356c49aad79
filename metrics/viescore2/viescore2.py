"""VIEScore2 as an `evaluate` metric, in two configurations.

- ``default`` (judge mode): judge images with prompts (and optional conditioning images) through
  the registered method's scorer (`viescore2.spec.SPEC`); a thin subclass of
  `vlmjudge.faces.ScoredModule`, the judge configured and loaded at load time,
  ``evaluate.load(path, "default", model=..., backend=...)``. Images are judged when they are
  added (`add` / `add_batch`) and only their records are stored, so in evaluate's multi-process
  mode each process judges its own shard and `compute()` only aggregates.
- ``evaluation``: judge output texts against ground-truth defect grids and scores through
  `viescore2.evaluation.evaluate_suite`; no model.
"""
from collections import Counter

import datasets
import evaluate

from viescore2.evaluation import Reference, evaluate_suite
from viescore2.grid import DEFAULT_N
from viescore2.pack import Fields
from viescore2.records import VIEScore2Record
from viescore2.spec import SPEC
from vlmjudge.faces.module import ScoredModule

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
Judge mode (config `default`; load with the judge arguments of every face, `model=` (no model:
the method's default model, Qwen/Qwen3-VL-8B-Instruct), `backend=`, `revision=`, `device=`,
`dtype=`, `cache=`, `judge_kwargs=` (other backend options), or `judge=` a loaded vlmjudge Judge;
and `fields=`, `grid_size=`, `pack=`, `scorer_kwargs=`):

Args:
    images (`list` of images): the generated images (PIL images, paths or bytes).
    prompts (`list` of `str`): the generation or editing prompt of each image.
    conditioning (`list` of `list` of images, optional): each image's conditioning images
        (sources or references; shown to the judge before the generated image), `[]` for none.
Returns (the keys of every module first):
    `viescore2` (mean overall 0-10 score over images with one, None if none) with `viescore2_ci`
    (its 95% interval [low, high], None under two scored images) and `viescore2_n`, `scores` (per
    image, None where no score was read), `n_items`, `n_scored`; then `parse_failures`
    (requested fields not read, summed), `status_counts`, `records` (one JSON dict per image:
    scores, grids, explanation, raw `text`, status; the texts can be evaluated with config
    `evaluation`), `manifest`, and `score` / `scored` (the mean and the count under their
    first-release names, kept for one release).

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
    ...                              device="cpu")
    >>> out = judge_metric.compute(images=[Image.new("RGB", (32, 32), "red")], prompts=["a red square"])
    >>> out["n_scored"], len(out["records"]), 0.0 <= out["viescore2"] <= 10.0
    (1, 1, True)
"""

CONFIGS = ("evaluation", "default")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VIEScore2(ScoredModule, evaluate.Metric):
    """VIEScore2: judge images (config `default`) or evaluate saved judge outputs (config `evaluation`)."""

    spec = SPEC
    columns = {"images": "image", "prompts": "prompt", "conditioning": "conditioning"}
    required = ("images", "prompts")
    options = ("fields", "grid_size", "pack", "scorer_kwargs")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.config_name != "default":
            if self._settings or self._judge is not None:
                given = sorted([*self._settings, *(["judge"] if self._judge is not None else [])])
                raise ValueError(f"judge options {given} apply to config 'default' only, not {self.config_name!r}")
            return
        self._settings.setdefault("fields", "pq_sc+split")
        self._settings["fields"] = Fields.parse(self._settings["fields"])  # a bad configuration fails at load time

    def scores_on_add(self):
        return self.config_name == "default"

    def method_config(self, settings):
        config = {k: settings[k] for k in ("fields", "grid_size", "pack") if settings.get(k) is not None}
        return {**config, **dict(settings.get("scorer_kwargs") or {})}

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

    def prepare_batch(self, batch):
        """Each image's conditioning images as a list (`[]` for none)."""
        if "conditioning" in batch:
            batch["conditioning"] = [list(c or []) for c in batch["conditioning"]]
        return batch

    def _compute(self, predictions=None, references=None, record=None, grid_size=DEFAULT_N):
        if self.config_name == "default":
            records = [VIEScore2Record.from_json(r) for r in self.read_records(record)]
            out = self.shared_result([r.overall for r in records])
            out.update(parse_failures=sum(r.parse_failures for r in records),
                       status_counts=dict(Counter(r.status for r in records)),
                       records=[r.to_json() for r in records], manifest=self.scorer().manifest(),
                       score=out["viescore2"], scored=out["n_scored"])
            return out
        refs = [Reference.from_record(r, n=grid_size) for r in references]
        return evaluate_suite(predictions, refs, n=grid_size)
