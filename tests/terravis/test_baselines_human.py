"""TerraVis-H, GPTScore and human-annotation scoring: expected records."""
import math

import pytest
from PIL import Image
from pydantic import ValidationError

from terravis import TYPE_IDS, TerraVis, score_annotation, score_annotations
from terravis.baselines import rating_score
from vlmjudge.backends.replay import ReplayJudge

from terravis_expected import expected_record

KEYS = ("item", "stage", "check")
PAPER_QUESTION = ("Please rate the world consistency of this image using an integer score from 1 to 5, where 1 "
                  "indicates severe world-consistency errors and 5 indicates no noticeable world-consistency errors.")


def images(n):
    return [Image.new("RGB", (10, 10), (20 * i, 0, 0)) for i in range(n)]


def test_holistic_expected_records():
    judge = ReplayJudge({
        ("a", "holistic", ""): {"probs": {"1": 0.05, "2": 0.05, "3": 0.1, "4": 0.5, "5": 0.3, "N": 0.0}},
        ("b", "holistic", ""): "N",
        ("c", "holistic", ""): None,
        ("d", "holistic", ""): "5",
    }, key_fields=KEYS)
    result = TerraVis(judge, variant="holistic").run(images(4), ids=["a", "b", "c", "d"])
    one_hot = lambda w: {o: float(o == w) for o in ("1", "2", "3", "4", "5", "N")}  # noqa: E731
    assert [r.to_json() for r in result.records] == [
        expected_record("a", "holistic", score=0.75, eligible=True, rating=4, valid=True,
             rating_probs={"1": 0.05, "2": 0.05, "3": 0.1, "4": 0.5, "5": 0.3, "N": 0.0}),
        expected_record("b", "holistic", status="not_applicable", eligible=False, rating_probs=one_hot("N")),
        expected_record("c", "holistic", status="failed", errors=["holistic: failed or empty response"]),
        expected_record("d", "holistic", score=1.0, eligible=True, rating=5, valid=True, rating_probs=one_hot("5")),
    ]
    assert result.counts == {"holistic": 4}
    asked = [r for _, r in judge.log]
    assert all(r.system and "Region continuity" in r.text and r.prefix == "Answer:\n" for r in asked)
    assert [r.has_violation for r in result.records] == [True, None, None, False]


def test_gptscore_expected_records_with_retry_in_generate_mode():
    judge = ReplayJudge({
        ("a", "gptscore", ""): "3",
        ("b", "gptscore", ""): ["Score: high", "2/5"],
        ("c", "gptscore", ""): ["no idea", "still no idea"],
        ("d", "gptscore", ""): "",
    }, key_fields=KEYS)
    result = TerraVis(judge, variant="gptscore", decision="generate").run(images(4), ids=["a", "b", "c", "d"])
    assert [r.to_json() for r in result.records] == [
        expected_record("a", "gptscore", score=0.5, eligible=True, rating=3, valid=True),
        expected_record("b", "gptscore", score=0.25, eligible=True, rating=2, valid=True, retries=1, parse_failures=1),
        expected_record("c", "gptscore", status="failed", retries=2, parse_failures=3,  # three attempts by default
             errors=["gptscore: no rating could be read"]),
        expected_record("d", "gptscore", status="failed", errors=["gptscore: failed or empty response"]),
    ]
    assert result.counts == {"gptscore": 4, "retries": 3}
    first = judge.log[0][1]
    assert first.text == PAPER_QUESTION and first.system is None
    assert first.constraint.first_options == ("1", "2", "3", "4", "5")


def test_rating_score_range():
    assert [rating_score(r) for r in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    with pytest.raises(ValueError):
        rating_score(6)


def test_human_annotation_scoring():
    recs = score_annotations([
        {"image_id": "x", "eligible": True, "violations": [
            {"type": "biological_anatomy", "severity": "major", "evidence": "Six fingers."},
            {"type": "Optical effect", "severity": "Minor"},
            {"type": "relative_scale", "severity": "minor"}]},
        {"image_id": "y", "eligible": True},
        {"image_id": "z", "eligible": False, "eligibility_reason": "a bar chart"},
    ])
    x, y, z = recs
    assert x.score == pytest.approx(math.exp(-2.0)) and (x.n_major, x.n_minor) == (1, 2)
    assert x.detected_types() == ["biological_anatomy", "optical_effect", "relative_scale"]
    bio = x.checks[TYPE_IDS.index("biological_anatomy")]
    assert (bio.severity, bio.evidence, bio.prob) == ("major", "Six fingers.", None)
    assert len(x.checks) == 18 and x.variant == "human" and x.valid
    assert y.score == 1.0 and y.has_violation is False
    assert z.score is None and z.status == "not_applicable" and z.eligibility_reason == "a bar chart"
    assert score_annotation({"image_id": "w", "eligible": True, "violations": [
        {"type": "contact_state", "severity": "major"}]}, lam=0.5).score == pytest.approx(math.exp(-0.5))


@pytest.mark.parametrize("bad, match", [
    ({"image_id": "x", "eligible": True, "violations": [{"type": "gravity", "severity": "major"}]}, "unknown"),
    ({"image_id": "x", "eligible": True, "violations": [{"type": "contact_state", "severity": "big"}]}, "severity"),
    ({"image_id": "x", "eligible": True, "violations": [{"type": "contact_state", "severity": "major"},
                                                         {"type": "Contact state", "severity": "minor"}]},
     "more than once"),
    ({"image_id": "x", "eligible": False, "violations": [{"type": "contact_state", "severity": "major"}]}, "N/A"),
])
def test_bad_annotations_raise(bad, match):
    with pytest.raises(ValidationError, match=match):
        score_annotation(bad)


def test_repeated_annotation_ids_raise():
    with pytest.raises(ValueError, match="repeat"):
        score_annotations([{"image_id": "a", "eligible": True}, {"image_id": "a", "eligible": True}])
