"""The Factual A/B test: hand-made pairs, tie modes, and the released ABO numbers."""
from __future__ import annotations

import math

import pytest

from fager.evaluation import ab_test
from fager.saved_runs import details_scores, summary_scores

FACTUAL = {"a": 90.0, "b": 50.0, "c": 70.0, "d": 100.0}
GENERATED = {"a": 80.0, "b": 50.0, "c": 75.5, "d": 100.0}  # win, tie, loss, tie


@pytest.mark.parametrize(("tie", "correct", "wrong", "accuracy"), [
    ("full", 3, 1, 0.75), ("zero", 1, 3, 0.25), ("skip", 1, 1, 0.5),
])
def test_tie_modes_by_hand(tie, correct, wrong, accuracy):
    report = ab_test(FACTUAL, GENERATED, tie=tie)
    assert (report.pairs, report.correct, report.wrong, report.ties) == (4, correct, wrong, 2)
    assert report.accuracy == accuracy
    assert report.margins == {"a": 10.0, "b": 0.0, "c": -5.5, "d": 0.0}


def test_default_is_full_and_lower_is_better_flips():
    assert ab_test(FACTUAL, GENERATED).tie_mode == "full"
    flipped = ab_test(FACTUAL, GENERATED, tie="zero", higher_is_better=False)
    assert (flipped.correct, flipped.margins["c"]) == (1, 5.5)
    assert flipped.margins["a"] == -10.0


def test_all_ties_skipped_has_no_accuracy():
    report = ab_test({"a": 1.0}, {"a": 1.0}, tie="skip")
    assert report.accuracy is None and "n/a" in report.describe()


def test_strict_pairing_rejects_unpaired_and_missing_scores():
    with pytest.raises(ValueError, match="unpaired"):
        ab_test({"a": 1.0, "b": 2.0}, {"a": 1.0, "c": 2.0}, strict=True)
    with pytest.raises(ValueError, match="finite"):
        ab_test({"a": math.nan}, {"a": 1.0}, strict=True)
    with pytest.raises(ValueError, match="finite"):
        ab_test({"a": None}, {"a": 1.0}, strict=True)
    with pytest.raises(ValueError, match="tie"):
        ab_test(FACTUAL, GENERATED, tie="half")


def test_default_pairing_is_the_release_inner_join():
    """Keys on one side only and missing scores drop their pair (the release's compute_pairwise)."""
    report = ab_test({"a": 3.0, "b": 2.0, "c": None, "d": math.nan}, {"a": 1.0, "c": 1.0, "d": 1.0, "e": 5.0})
    assert (report.pairs, report.wins, report.dropped, report.accuracy) == (1, 1, 4, 1.0)
    with pytest.raises(ValueError, match="repeat"):
        ab_test([("a", 1.0), ("a", 2.0)], [("a", 1.0)])
    with pytest.raises(ValueError, match="finite"):
        ab_test({"a": math.inf}, {"a": 1.0})


def test_margin_summary_by_hand():
    """Margins +2, 0, -4: all mean -2/3 and population std sqrt(56/9); wins [2]; losses [-4]."""
    report = ab_test({"a": 3.0, "b": 1.0, "c": 0.0}, {"a": 1.0, "b": 1.0, "c": 4.0}, tie="zero")
    summary = report.margin_summary()
    assert summary["all"]["mean"] == pytest.approx(-2 / 3)
    assert summary["all"]["std"] == pytest.approx(math.sqrt(56 / 9))
    assert summary["wins"] == {"mean": 2.0, "std": 0.0} and summary["losses"] == {"mean": -4.0, "std": 0.0}
    assert (report.correct, report.wrong, report.wins, report.losses, report.skipped) == (1, 2, 1, 1, 0)
    assert ab_test({"a": 1.0}, {"a": 2.0}, tie="skip").margin_summary()["wins"] == {"mean": None, "std": None}


@pytest.mark.parametrize("source", ["details", "summary"])
def test_released_abo_accuracy(abo, source):
    """Paper Table 1 (ABO, FAGER): 0.82; the release's tie modes give 41/50, 23/50, 23/32."""
    results = abo / "results"
    if source == "details":
        real = details_scores(results / "real" / "details.jsonl")
        flux = details_scores(results / "flux2" / "details.jsonl")
    else:
        real = summary_scores(results / "real" / "summary.csv")
        flux = summary_scores(results / "flux2" / "summary.csv")
    full, zero, skip = (ab_test(real, flux, tie=t) for t in ("full", "zero", "skip"))
    assert (full.correct, full.wrong, full.pairs, full.ties) == (41, 9, 50, 18)
    assert full.accuracy == 0.82
    assert (zero.correct, zero.wrong) == (23, 27)
    assert (skip.correct, skip.correct + skip.wrong, skip.ties) == (23, 32, 18)
    assert full.margins["1"] == 0.0  # both 87.5
    assert full.margins["10"] == pytest.approx(91.666666 - 75.0, abs=0.01)
