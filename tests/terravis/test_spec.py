"""TerraVis's MethodSpec passes the shared conformance suite and renders its records."""
from PIL import Image

from terravis import TYPE_IDS, ImageRecord
from terravis.spec import SPEC, render
from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.testing.conformance import check_method

KEYS = ("item", "stage", "check")


def scripted_judge():
    answers = {("0", "eligibility", ""): "Yes", ("1", "eligibility", ""): "No",
               ("1", "eligibility_reason", ""): '{"reason": "A bar chart."}',
               ("0", "evidence", "support_stability"): '{"aspect": "cup", "evidence": "The cup floats."}',
               ("0", "severity", "support_stability"): "Major"}
    answers.update({("0", "detection", t): "Yes" if t == "support_stability" else "No" for t in TYPE_IDS})
    return ReplayJudge(answers, key_fields=KEYS)


def test_conformance():
    batch = {"image": [Image.new("RGB", (12, 12), "red"), Image.new("RGB", (12, 12), "blue")]}
    records = check_method(SPEC, scripted_judge(), batch)
    assert [r.status for r in records] == ["scored", "not_applicable"]
    assert SPEC.name == "terravis" and SPEC.inputs == ("image",) and SPEC.score_range == (0.0, 1.0)
    assert SPEC.normalize(0.3) == 0.3


def test_render_lists_eligibility_violations_evidence_and_severity():
    batch = {"image": [Image.new("RGB", (12, 12), "red"), Image.new("RGB", (12, 12), "blue")]}
    scored, na = SPEC.build(scripted_judge()).score_batch(batch)
    shown = render(scored)
    assert shown["score_text"] == "0.3679"
    assert "eligible" in shown["markdown"] and "Support and stability" in shown["markdown"]
    assert "The cup floats." in shown["markdown"] and "major" in shown["markdown"]
    shown = render(na)
    assert shown["score_text"] == "N/A" and "A bar chart." in shown["markdown"]
    failed = ImageRecord("z", status="failed", errors=["eligibility: failed or empty response"])
    assert "failed" in render(failed)["score_text"] and "not as clean" in render(failed)["markdown"]


def test_build_passes_configuration():
    scorer = SPEC.build(scripted_judge(), variant="holistic", alpha=0.25)
    assert scorer.variant == "holistic" and scorer.alpha == 0.25
