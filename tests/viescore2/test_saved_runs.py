"""The release-layout reports: run_eval's rows and summary, dev_eval's summary."""
import pytest

from viescore2.grid import Grid
from viescore2.saved_runs import (correlation_block, development_report, ratios, reference_from_release,
                                    suite_report)


def release_row(pred_gt_cells=(), source="PAL4VST", visual=True, score=None, axes=(None, None), channels=None):
    return {"gt_cells": [list(c) for c in pred_gt_cells], "has_visual_gt": visual, "gt_channels": channels,
            "source": source, "gt_score": score, "gt_axes": list(axes)}


def test_ratios_all_empty_and_undefined():
    assert ratios(0, 0, 0) == (1.0, 1.0, 1.0)
    assert ratios(0, 0, 0, all_empty=0.0) == (0.0, 0.0, 0.0)
    assert ratios(0, 3, 0) == (0.0, 0.0, 0.0)
    assert ratios(2, 2, 0) == pytest.approx((0.5, 1.0, 2 / 3))


def test_references_from_release_rows():
    coco = reference_from_release(release_row(source="COCO-real", visual=False, score=1.0, axes=(0.5, None)))
    assert coco.localization == Grid() and coco.scores == {"score": 10.0, "pq": 5.0} and coco.source == "COCO-real"
    assert reference_from_release(release_row(visual=False)).localization is None  # no localization truth
    split = reference_from_release(release_row(channels={"artifact": {"problem": [[1, 1]], "major": [[1, 1]]},
                                                         "misalign": {"problem": [], "major": []}}))
    assert split.localization.union() == Grid({(1, 1)}, {(1, 1)})


def test_suite_report_rows_and_summary():
    texts = ["score: 3/10\nr1: 1,2", "score: 8/10\nnone", "score: 6/10\nthe image is fine", "score: 9/10\nr4: 4"]
    refs = [reference_from_release(r) for r in (
        release_row([(1, 1)], score=0.2), release_row(score=0.9), release_row(score=0.7),
        release_row(source="EvalMuse", visual=False, score=0.8))]
    out = suite_report(texts, refs)
    first, clean, failed, unlocalized = out["rows"]
    assert (first["cell_tp"], first["cell_fp"], first["cell_fn"], first["cell_tn"]) == (1, 1, 0, 254)
    assert first["grid_iou"] == 0.5 and first["cell_f1"] == pytest.approx(0.6667)
    assert clean["grid_iou"] == 1.0 and clean["cell_precision"] == 1.0  # clean and empty: 1.0
    assert failed["grid_parsed"] is False and failed["pred_score"] == 6.0
    assert failed["grid_iou"] == 0.0 and failed["cell_f1"] == 1.0  # a failure has IoU 0; counts are all 0
    assert unlocalized["grid_iou"] is None and unlocalized["channel_confusion"] is None
    summary = out["summary"]
    assert summary["n_localization_gt"] == 3 and summary["n_problem_gt"] == 1
    assert summary["avg_grid_iou"] == pytest.approx(round((0.5 + 1.0 + 0.0) / 3, 4))
    assert summary["avg_grid_iou_problem_only"] == 0.5
    assert summary["grid_parse_rate"] == 75.0 and summary["avg_gt_score"] == pytest.approx(6.5)
    # the paper: a failed parse on a clean image is no success; the release counts it
    assert summary["clean_correct"] == 1
    assert suite_report(texts, refs, clean_failures_count=True)["summary"]["clean_correct"] == 2
    assert summary["score_pred_n"] == 4 and summary["score_spearman"] == pytest.approx(0.8)
    assert "channel_samples" not in summary and "pq_n" not in summary  # absent, as the release leaves them
    assert (summary["errors"], summary["scored_samples"]) == (0, 4)
    no_answer = suite_report([None] + texts[1:], refs)
    assert (no_answer["summary"]["errors"], no_answer["summary"]["scored_samples"]) == (1, 3)
    assert no_answer["rows"][0]["grid_parsed"] is False and no_answer["rows"][0]["cell_fn"] == 1


def test_suite_report_channels_and_a_lone_section():
    channels = {"artifact": {"problem": [[1, 1], [2, 2]], "major": [[1, 1]]}, "misalign": {"problem": [], "major": []}}
    ref = reference_from_release(release_row(channels=channels))
    out = suite_report(["artifact:\nr1: 1!\nr2: 2"], [ref])
    row = out["rows"][0]
    assert row["channel_confusion"]["artifact"] == {"tp": 2, "fp": 0, "fn": 0, "tn": 254}
    assert row["channel_confusion"]["misalign"] == {"tp": 0, "fp": 0, "fn": 0, "tn": 256}
    assert row["coverage_confusion"] == {"tp": 1, "fp": 0, "fn": 0, "tn": 255}
    summary = out["summary"]
    assert summary["artifact_f1_micro"] == 1.0 and summary["misalign_f1_micro"] == 1.0
    assert summary["coverage_samples"] == 1 and summary["coverage_f1_micro"] == 1.0


def test_correlations_leave_out_clean_sources_and_need_three_pairs():
    block = correlation_block([1, 2, 3, 9], [1, 2, 3, 0], ["A", "A", "A", "COCO-real"])
    assert block == {"score_n": 3, "score_pearson": 1.0, "score_spearman": 1.0}
    assert correlation_block([1, 2], [1, 2])["score_spearman"] is None


def test_development_report():
    texts = ["r1: 1", "none", "r2: 2", "garbage"]
    truths = [Grid({(1, 1)}), Grid(), Grid(), Grid({(3, 3)})]
    out = development_report(texts, truths, ["A", "A", "B", "B"], [False, True, True, False])
    assert out["rows"] == [{"tp": 1, "fp": 0, "fn": 0, "parsed": True}, {"tp": 0, "fp": 0, "fn": 0, "parsed": True},
                           {"tp": 0, "fp": 1, "fn": 0, "parsed": True}, {"tp": 0, "fp": 0, "fn": 1, "parsed": False}]
    summary = out["summary"]
    assert summary["clean_false_positive_rate"] == {"A": {"n_clean": 1, "flagged": 0},
                                                    "B": {"n_clean": 1, "flagged": 1}}
    assert summary["per_source_f1"] == {"A": 1.0, "B": 0.0} and summary["parse_rate"] == 75.0
    assert summary["iou_p"] == 0.5 and summary["f1"] == 0.5
    # an all-empty suite scores 0.0 here, where suite_report gives 1.0
    assert development_report(["none"], [Grid()], ["A"], [True])["summary"]["f1"] == 0.0
