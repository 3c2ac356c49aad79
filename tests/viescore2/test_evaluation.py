"""Paper evaluation: micro P/R/F1, grid IoU, false alarms, parse failures, SRCC, preferences, pixel-IoU."""
import numpy as np
import pytest
from scipy.stats import spearmanr

from viescore2.evaluation import (
    Reference, evaluate_suite, grid_iou, localization_metrics, pearson, pixel_iou, preference_accuracy, same_support,
    srcc,
)
from viescore2.scoring import geometric_overall
from viescore2.grid import CategoryGrids, Grid

SQUARE = Grid({(1, 1), (1, 2), (2, 1), (2, 2)})
# (prediction text, ground-truth grid)
SUITE = [
    ("score: 3/10\nr1: 1,2\nr3: 3", SQUARE),            # TP 2, FP 1, FN 2, IoU 2/5
    ("score: 4/10\nthe hand looks wrong", Grid({(5, 5)})),  # parse failure: FN 1, IoU 0
    ("score: 9/10\nnone", Grid()),                     # clean, correct
    ("score: 8/10\nr4: 4,5", Grid()),                  # clean, false alarm: FP 2
    ("score: 7/10\nno problems", Grid()),              # clean, parse failure
    ("score: 5/10\nr8: 8,9", Grid({(8, 8), (8, 9)})),  # TP 2, IoU 1
]


def suite_refs(scores=(2, 5, 9, 6, 8, 5)):
    return [Reference(g, {"score": s}) for (_, g), s in zip(SUITE, scores)]


def test_hand_computed_localization_suite():
    out = evaluate_suite([t for t, _ in SUITE], suite_refs())
    assert (out["tp"], out["fp"], out["fn"]) == (4, 3, 3)
    assert out["micro_precision"] == pytest.approx(4 / 7)
    assert out["micro_recall"] == pytest.approx(4 / 7)
    assert out["micro_f1"] == pytest.approx(2 * 4 / (2 * 4 + 3 + 3))
    assert out["grid_iou"] == pytest.approx((2 / 5 + 0 + 1) / 3)
    assert out["grid_iou_images"] == 3
    assert out["clean_images"] == 3 and out["false_alarms"] == 1 and out["clean_correct"] == 1
    assert out["clean_parse_failures"] == 1 and out["parse_failures"] == 2


def test_an_unparseable_prediction_lowers_recall_and_is_a_failure():
    texts = [t for t, _ in SUITE]
    fixed = list(texts)
    fixed[1] = "score: 4/10\nr5: 5"
    bad, good = evaluate_suite(texts, suite_refs()), evaluate_suite(fixed, suite_refs())
    assert good["micro_recall"] == pytest.approx(5 / 7) and bad["micro_recall"] == pytest.approx(4 / 7)
    assert good["parse_failures"] == 1 and bad["parse_failures"] == 2
    # on a clean image a failure is never a success
    clean = localization_metrics([None], [Grid()])
    assert clean["clean_correct"] == 0 and clean["clean_parse_failures"] == 1 and clean["false_alarms"] == 0


def test_grid_iou_per_image():
    assert grid_iou(Grid({(1, 1), (1, 2)}), Grid({(1, 2), (1, 3)})) == pytest.approx(1 / 3)
    assert grid_iou(None, Grid({(1, 1)})) == 0.0
    assert grid_iou(Grid(), Grid()) is None


def test_srcc_with_ties_equals_scipy():
    pred = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    target = [2, 7, 1, 8, 2, 8, 1, 8, 2, 8]
    corr = srcc(pred, target)
    assert corr.value == pytest.approx(spearmanr(pred, target).statistic)
    assert (corr.n_valid, corr.n_total) == (10, 10)


def test_srcc_counts_valid_pairs_and_is_undefined_for_constants():
    corr = srcc([1.0, None, 3.0, 2.0, float("nan")], [1, 2, 3, 4, 5])
    assert (corr.n_valid, corr.n_total) == (3, 5)
    assert corr.value == pytest.approx(spearmanr([1, 3, 2], [1, 3, 4]).statistic)
    assert srcc([5, 5, 5], [1, 2, 3]).value is None
    assert srcc([1, 2, 3], [4, 4, 4]).value is None
    assert srcc([1], [1]).value is None
    # at least 3 valid pairs (the release's rule); fewer is undefined, whatever their order
    assert srcc([1, 2], [1, 2]).value is None and srcc([1, 2], [1, 2], min_pairs=2).value == pytest.approx(1.0)
    assert srcc([1, 2, None, 3], [1, 2, 5, 3]).value == pytest.approx(1.0)


def test_suite_scores_use_parsed_pairs():
    out = evaluate_suite([t for t, _ in SUITE], suite_refs())
    assert out["srcc_overall"] == pytest.approx(spearmanr([3, 4, 9, 8, 7, 5], [2, 5, 9, 6, 8, 5]).statistic)
    assert (out["srcc_overall_pairs"], out["srcc_overall_total"]) == (6, 6)
    texts = ["pq: 4/10\nsc: 9/10", "pq: 8/10", "garbage", "pq: 2/10\nsc: 2/10"]
    refs = [Reference(None, {"pq": 5, "sc": 9}), Reference(None, {"pq": 7, "sc": 3}),
            Reference(None, {"pq": 1, "sc": 1}), Reference(None, {"score": 1})]
    out = evaluate_suite(texts, refs)
    assert (out["srcc_pq_pairs"], out["srcc_pq_total"]) == (2, 3)
    assert (out["srcc_sc_pairs"], out["srcc_sc_total"]) == (1, 3) and out["srcc_sc"] is None
    # overall: geometric means on both sides where pq and sc are present
    assert (out["srcc_overall_pairs"], out["srcc_overall_total"]) == (2, 4)
    assert out["grid_iou"] is None and out["grid_images"] == 0


def test_same_support_restricts_both_methods_to_common_pairs():
    target = [1, 2, 3, 4, 5]
    a = [1, 2, 3, None, 4]
    b = [None, 1, 3, 2, 5]
    ca, cb = same_support(a, b, target)
    assert ca.n_valid == cb.n_valid == 3 and ca.n_total == 5
    assert ca.value == pytest.approx(spearmanr([2, 3, 4], [2, 3, 5]).statistic)
    assert cb.value == pytest.approx(spearmanr([1, 3, 5], [2, 3, 5]).statistic)


def test_overall_is_the_geometric_mean():
    assert geometric_overall(4, 9) == pytest.approx(6.0)


def test_preference_accuracy_ties_and_unparseable_count_half():
    result = preference_accuracy([7, 3, None, 2], [5, 3, 4, 6], [0, 0, 1, 0])
    assert result.accuracy == pytest.approx((1 + 0.5 + 0.5 + 0) / 4)
    assert (result.pairs, result.ties, result.unparseable) == (4, 1, 1)
    assert result.credits == (1.0, 0.5, 0.5, 0.0)
    # the release's "A"/"B" choices; a NaN score is unparsed (the paper), not a number that loses
    nan = preference_accuracy([float("nan"), 8], [4, 2], ["A", "B"])
    assert nan.credits == (0.5, 0.0) and nan.unparseable == 1
    as_release = preference_accuracy([float("nan"), float("nan")], [4, 2], ["A", "B"], nan_is_unparsed=False)
    assert as_release.credits == (0.0, 1.0) and as_release.unparseable == 0
    with pytest.raises(ValueError):
        preference_accuracy([1], [2], [2])


def test_pixel_iou_between_grid_and_dense_mask():
    mask = np.zeros((8, 8), dtype=bool)
    mask[0:2, 0:3] = True                      # 6 pixels
    grid = Grid({(1, 1)}, n=4)                 # cell (1,1) = pixels [0:2, 0:2]
    assert pixel_iou(grid, mask) == pytest.approx(4 / 6)
    assert pixel_iou(Grid(n=4), np.zeros((8, 8), bool)) is None


def test_category_metrics_and_reference_records():
    ref = Reference.from_record({"id": 1, "artifact": "r1: 1!", "misalign": "none", "pq": 5, "sc": 7})
    assert ref.localization == CategoryGrids(Grid({(1, 1)}, {(1, 1)}), Grid())
    assert ref.id == "1"
    out = evaluate_suite(["artifact:\nnone\nmisalign:\nr1: 1", "r1: 1"], [ref, ref])
    assert out["micro_f1"] == 1.0  # the union ignores category swaps and a single-grid answer
    # a flat answer writes no category section: an empty prediction per category (as the release), not a failure
    assert out["artifact_tp"] == 0 and out["artifact_fn"] == 2 and out["artifact_parse_failures"] == 0
    assert out["misalign_false_alarms"] == 1 and out["misalign_clean_correct"] == 1
    with pytest.raises(ValueError, match="together"):
        Reference.from_record({"artifact": "none"})
    with pytest.raises(ValueError, match="grid"):
        Reference.from_record({"id": "x", "grid": "r1: x"})
    with pytest.raises(ValueError):
        Reference.from_record({"score": 11})


def test_pearson_needs_three_pairs_and_spread():
    pred, target = [3, 1, 4, 1, 5], [2, 7, 1, 8, 2]
    assert pearson(pred, target).value == pytest.approx(np.corrcoef(pred, target)[0, 1])
    assert pearson([1, 2], [2, 4]).value is None and pearson([1, 1, 1], [1, 2, 3]).value is None


def test_a_prediction_with_one_section_is_credited_on_it():
    ref = Reference.from_record({"artifact": "r1: 1!\nr2: 2", "misalign": "none"})
    out = evaluate_suite(["score: 5/10\nartifact:\nr1: 1!\nr2: 2"], [ref])
    assert (out["artifact_tp"], out["artifact_fn"], out["artifact_parse_failures"]) == (2, 0, 0)
    assert out["artifact_micro_f1"] == 1.0
    assert out["misalign_clean_correct"] == 1 and out["misalign_false_alarms"] == 0


def test_coverage_marks_precision_recall_f1():
    ref = Reference.from_record({"artifact": "r1: 1!,2!\nr3: 3", "misalign": "r5: 5!"})
    texts = ["artifact:\nr1: 1!,2\nr3: 3!\nmisalign:\nr5: 5",   # marks (1,1) right, (3,3) wrong
             "r1: 1!,2!\nr5: 5!",                                 # a flat grid marks nothing
             "no grid here"]                                        # a failure marks nothing
    out = evaluate_suite(texts, [ref] * 3)
    assert (out["coverage_tp"], out["coverage_fp"], out["coverage_fn"]) == (1, 1, 2 + 3 + 3)
    assert out["coverage_precision"] == pytest.approx(0.5) and out["coverage_recall"] == pytest.approx(1 / 9)
    assert out["coverage_f1"] == pytest.approx(2 / (2 + 1 + 8)) and out["coverage_images"] == 3
    assert "coverage_f1" not in evaluate_suite(["r1: 1"], [Reference(Grid({(1, 1)}, {(1, 1)}))])
