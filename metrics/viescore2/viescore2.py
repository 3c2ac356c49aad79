"""VIEScore2 as an `evaluate` metric: judge output texts against ground-truth defect grids and scores.

A thin face over `viescore2.evaluation`: it declares the features, turns each reference
into a `Reference` and returns every metric of `evaluate_suite`.
"""
import datasets
import evaluate

from viescore2.evaluation import Reference, evaluate_suite
from viescore2.grid import DEFAULT_N

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
their valid-pair counts.
"""

_KWARGS_DESCRIPTION = """
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
    >>> metric = evaluate.load("viescore2", "evaluation")  # doctest: +SKIP
    >>> refs = [{"grid": "r5: 8,9!", "artifact": None, "misalign": None, "score": 3.0, "pq": None, "sc": None},
    ...         {"grid": "none", "artifact": None, "misalign": None, "score": 9.0, "pq": None, "sc": None}]
    >>> preds = ["score: 2/10\\nr5: 9", "score: 8/10\\nnone"]
    >>> out = metric.compute(predictions=preds, references=refs)
    >>> out["micro_f1"], out["grid_iou"], out["false_alarms"], out["srcc_overall"]
    (0.6666666666666666, 0.5, 0, 1.0)
"""

CONFIGS = ("evaluation", "default")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VIEScore2(evaluate.Metric):
    """Evaluation of saved VIEScore2-format judge outputs; no model is loaded."""

    def _info(self):
        if self.config_name not in CONFIGS:
            raise KeyError(f"unknown config {self.config_name!r} for viescore2; use 'evaluation'")
        grid = datasets.Value("string")
        score = datasets.Value("float64")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": {"grid": grid, "artifact": grid, "misalign": grid,
                               "score": score, "pq": score, "sc": score},
            }),
        )

    def _enforce_nested_string_type(self, schema, obj):
        # evaluate rejects None for string features; a null grid means "no localization target"
        if obj is None:
            return None
        return super()._enforce_nested_string_type(schema, obj)

    def _compute(self, predictions, references, grid_size=DEFAULT_N):
        refs = [Reference.from_record(r, n=grid_size) for r in references]
        return evaluate_suite(predictions, refs, n=grid_size)
