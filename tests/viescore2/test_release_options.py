"""The release's behaviour where it differs from the paper stays available by a named parameter:
checked on the vendored golden corpora's lines marked as release bugs 6 (clean_correct) and 7 (NaN)."""
import json
from pathlib import Path

import pytest

from viescore2.evaluation import preference_accuracy
from viescore2.saved_runs import reference_from_release, suite_report

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "viescore2"
NAN = {"NaN": float("nan")}


def marked(corpus: str, words: str) -> list[dict]:
    lines = [json.loads(line) for line in (GOLDEN / f"{corpus}.jsonl").read_text().splitlines() if line.strip()]
    return [c for c in lines if c.get("release_bug") and words in c.get("note", "")]


def test_nan_compared_as_a_number_reproduces_the_release():
    cases = marked("preference", "NaN")
    differ = 0
    for case in cases:
        pairs = case["input"]["pairs"]
        a, b = ([NAN.get(p[k], p[k]) if isinstance(p[k], str) else p[k] for p in pairs] for k in ("a", "b"))
        paper = preference_accuracy(a, b, [p["chosen"] for p in pairs])
        release = preference_accuracy(a, b, [p["chosen"] for p in pairs], nan_is_unparsed=False)
        assert list(release.credits) == case["expected"]["credits"]
        assert release.accuracy == pytest.approx(case["expected"]["accuracy_unrounded"], abs=1e-9)
        assert (release.ties, release.unparseable) == (case["expected"]["score_ties"],
                                                       case["expected"]["unparsed_pairs"])
        differ += paper.credits != release.credits
    assert differ > 0


def test_clean_failures_count_reproduces_the_release():
    cases = [c for c in marked("evaluation", "clean_correct") if "|" not in c["note"]]  # bug 6 alone
    assert cases
    for case in cases:
        rows = case["input"]["rows"]
        args = ([r["pred_text"] for r in rows], [reference_from_release(r) for r in rows])
        release = suite_report(*args, clean_failures_count=True)["summary"]
        paper = suite_report(*args)["summary"]
        assert release == case["expected"]["summary"]
        assert paper["clean_correct"] < release["clean_correct"]
