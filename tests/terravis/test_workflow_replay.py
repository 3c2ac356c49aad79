"""The staged workflow against scripted replay answers: exact records, fallbacks, request counts."""
import math
from collections import Counter

import pytest
from PIL import Image

from terravis import TYPE_IDS, TerraVis, get_type
from vlmjudge.backends.replay import ReplayJudge

from terravis_expected import expected_record

KEYS = ("item", "stage", "check")


def image(color):
    return Image.new("RGB", (16, 12), color)


def judge_for(script, default_detection="No"):
    """Replay answers keyed by (image, stage, check); unlisted detections answer `default_detection`."""
    answers = dict(script)
    for item in {k[0] for k in script}:
        if (item, "detection", TYPE_IDS[0]) in answers or any(k[0] == item and k[1] == "detection" for k in script):
            for t in TYPE_IDS:
                answers.setdefault((item, "detection", t), default_detection)
    return ReplayJudge(answers, key_fields=KEYS)


def check(type_id, **changes):
    vtype = get_type(type_id)
    out = {"type_id": type_id, "level": vtype.level, "name": vtype.name, "detected": False, "prob": None,
           "parse_ok": True, "aspect": None, "evidence": None, "evidence_parse_ok": None, "severity": None,
           "severity_prob": None, "severity_parse_ok": None, "severity_reason": None}
    out.update(changes)
    return out


def checks(no_prob=None, **special):
    return [special.get(t, check(t, prob=no_prob)) for t in TYPE_IDS]


def stage_counts(judge):
    return Counter((op, r.meta["stage"], r.meta["attempt"] > 0) for op, r in judge.log)


# -- choice mode: decisions from choice_probs ----------------------------------------------
CHOICE_SCRIPT = {
    ("clean", "eligibility", ""): {"probs": {"Yes": 0.9, "No": 0.1}},
    ("clean", "detection", "object_identity"): "No",
    ("flawed", "eligibility", ""): "Yes",
    ("flawed", "detection", "biological_anatomy"): {"probs": {"Yes": 0.8, "No": 0.2}},
    ("flawed", "detection", "support_stability"): "Yes",
    ("flawed", "detection", "symbolic_content"): "Yes",
    ("flawed", "evidence", "biological_anatomy"): '{"aspect": "the left hand", "evidence": "The hand has six fingers."}',
    ("flawed", "evidence", "support_stability"): ' {"aspect": "vase", "evidence": "A vase hangs in mid-air."} ',
    ("flawed", "evidence", "symbolic_content"): "The shop sign is garbled.",
    ("flawed", "severity", "biological_anatomy"): {"probs": {"Major": 0.6, "Minor": 0.4}},
    ("flawed", "severity", "support_stability"): "Minor",
    ("flawed", "severity", "symbolic_content"): "Major",
    ("logo", "eligibility", ""): {"probs": {"Yes": 0.25, "No": 0.75}},
    ("logo", "eligibility_reason", ""): '{"reason": "A flat company logo on white."}',
    ("broken", "eligibility", ""): "Yes",
    ("broken", "detection", "optical_effect"): None,
}

CHOICE_EXPECTED = [
    expected_record("clean", score=1.0, eligible=True, eligibility_prob=0.9, checks=checks(0.0), valid=True),
    expected_record("flawed", score=math.exp(-2.5), eligible=True, eligibility_prob=1.0, n_major=2, n_minor=1,
           parse_failures=1, valid=True, checks=checks(
               0.0,
               biological_anatomy=check("biological_anatomy", detected=True, prob=0.8, aspect="the left hand",
                                        evidence="The hand has six fingers.", evidence_parse_ok=True,
                                        severity="major", severity_prob=0.6, severity_parse_ok=True),
               support_stability=check("support_stability", detected=True, prob=1.0, aspect="vase",
                                       evidence="A vase hangs in mid-air.", evidence_parse_ok=True,
                                       severity="minor", severity_prob=0.0, severity_parse_ok=True),
               symbolic_content=check("symbolic_content", detected=True, prob=1.0, evidence_parse_ok=False,
                                      severity="major", severity_prob=1.0, severity_parse_ok=True))),
    expected_record("logo", status="not_applicable", eligible=False, eligibility_prob=0.25,
           eligibility_reason="A flat company logo on white."),
    expected_record("broken", status="failed", eligible=True, eligibility_prob=1.0,
           errors=["detection/optical_effect: failed or empty response"],
           checks=checks(0.0, optical_effect=check("optical_effect", detected=None))),
]


def run_choice(**kwargs):
    judge = judge_for(CHOICE_SCRIPT)
    tv = TerraVis(judge, **kwargs)
    ids = ["clean", "flawed", "logo", "broken"]
    result = tv.run([image(c) for c in ("white", "red", "blue", "black")], ids=ids)
    return judge, tv, result


def test_choice_mode_exact_records():
    _, _, result = run_choice()
    assert [r.to_json() for r in result.records] == CHOICE_EXPECTED


def test_choice_mode_request_counts_are_exactly_the_needed_ones():
    judge, tv, result = run_choice()
    B, E, k = 4, 3, 3
    expected = {("choice_probs", "eligibility", False): B,
                ("generate", "eligibility_reason", False): B - E,
                ("choice_probs", "detection", False): 18 * E,
                ("generate", "evidence", False): k,
                ("choice_probs", "severity", False): k}
    assert stage_counts(judge) == expected
    assert result.counts == {"eligibility": B, "eligibility_reason": B - E, "detection": 18 * E,
                             "evidence": k, "severity": k}
    assert tv.last_counts == result.counts
    assert judge.stats.model_calls == sum(expected.values())


def test_requests_of_one_image_are_adjacent_and_share_the_image():
    judge, _, _ = run_choice()
    detection = [r for op, r in judge.log if r.meta["stage"] == "detection"]
    items = [r.meta["item"] for r in detection]
    blocks = [items[i] for i in range(len(items)) if i == 0 or items[i] != items[i - 1]]
    assert blocks == ["clean", "flawed", "broken"]
    for start in range(0, len(detection), 18):
        block = detection[start:start + 18]
        assert [r.meta["check"] for r in block] == list(TYPE_IDS)
        assert len({id(r.images[0]) for r in block}) == 1
        assert all(r.prefix == "Answer:\n" and r.decoding.max_new_tokens == 1 for r in block)


def test_evidence_continues_the_chosen_option_under_a_bounded_schema():
    judge, tv, _ = run_choice()
    evidence = [r for op, r in judge.log if r.meta["stage"] == "evidence"]
    assert [r.meta["check"] for r in evidence] == ["biological_anatomy", "symbolic_content", "support_stability"]
    for r in evidence:
        assert r.prefix == "Answer:\nYes"
        schema = r.constraint.schema
        assert schema["properties"]["evidence"]["maxLength"] == tv.pack.limits["evidence"]
        assert r.constraint.first_options is None
    severity = [r for op, r in judge.log if r.meta["stage"] == "severity"]
    assert severity[0].images == [] and "The hand has six fingers." in severity[0].text
    assert "not stated" in severity[1].text  # symbolic_content: unparseable evidence


def test_summary_of_the_scripted_run():
    _, tv, result = run_choice()
    s = tv.summarize(result.records)
    assert (s["n_images"], s["n_scored"], s["n_not_applicable"], s["n_failed"]) == (4, 2, 1, 1)
    assert s["na_rate"] == 0.5
    assert s["mean_score"] == pytest.approx((1 + math.exp(-2.5)) / 2)
    assert (s["n_major"], s["n_minor"], s["images_with_violation"]) == (2, 1, 1)
    assert s["level_counts"] == {"object": 2, "interaction": 1, "scene": 0}
    assert s["parse_failures"] == 1 and s["retries"] == 0


def test_weights_are_configurable():
    _, _, result = run_choice(lam=2.0, alpha=0.25)
    flawed = result.records[1]
    assert flawed.score == pytest.approx(math.exp(-2.0 * 2.25))
    assert (flawed.lam, flawed.alpha) == (2.0, 0.25)
    assert flawed.rescore(1.0, 0.5) == pytest.approx(math.exp(-2.5))


def test_reason_policies():
    script = dict(CHOICE_SCRIPT)
    script[("clean", "eligibility_reason", "")] = '{"reason": "A street photo."}'
    script[("flawed", "eligibility_reason", "")] = '{"reason": "A photo of a man."}'
    script[("broken", "eligibility_reason", "")] = '{"reason": "A room."}'
    script.update({("flawed", "severity_reason", t): '{"reason": "It is the subject."}'
                   for t in ("biological_anatomy", "support_stability", "symbolic_content")})
    judge = judge_for(script)
    recs = TerraVis(judge, eligibility_reasons="all", severity_reasons=True).score(
        [image("white"), image("red"), image("blue"), image("black")], ids=["clean", "flawed", "logo", "broken"])
    assert [r.eligibility_reason for r in recs] == ["A street photo.", "A photo of a man.",
                                                     "A flat company logo on white.", "A room."]
    assert [c.severity_reason for c in recs[1].checks if c.detected] == ["It is the subject."] * 3
    reasons = [r for _, r in judge.log if r.meta["stage"] == "severity_reason"]
    assert [r.meta["check"] for r in reasons] == ["biological_anatomy", "symbolic_content", "support_stability"]
    assert [r.prefix for r in reasons] == ["Answer:\nMajor", "Answer:\nMajor", "Answer:\nMinor"]
    judge = judge_for(CHOICE_SCRIPT)
    recs = TerraVis(judge, eligibility_reasons="none").score(
        [image("white"), image("red"), image("blue"), image("black")], ids=["clean", "flawed", "logo", "broken"])
    assert recs[2].eligibility_reason is None
    assert not any(r.meta["stage"] == "eligibility_reason" for _, r in judge.log)


# -- generate mode: decisions from constrained generation, with unreadable answers ----------
GENERATE_SCRIPT = {
    ("retry_ok", "eligibility", ""): ["maybe", "Yes"],
    ("retry_ok", "detection", "structural_distortion"): "Perhaps",
    ("retry_ok", "detection", "energy_source"): "   ",  # blank: an answer that cannot be read (issue 18)
    ("retry_bad", "eligibility", ""): ["hmm", "???"],
    ("sev_bad", "eligibility", ""): "Yes",
    ("sev_bad", "detection", "contact_state"): " yes",
    ("sev_bad", "evidence", "contact_state"): '{"aspect": "hand and cup", "evidence": "Fingers pass through the cup."}',
    ("sev_bad", "severity", "contact_state"): "Severe",
    ("empty", "eligibility", ""): "Yes",
    ("empty", "detection", "energy_source"): "",
    ("evid_fail", "eligibility", ""): "Yes",
    ("evid_fail", "detection", "relative_scale"): "Yes",
    ("evid_fail", "evidence", "relative_scale"): None,
}

GENERATE_EXPECTED = [
    expected_record("retry_ok", score=1.0, eligible=True, parse_failures=3, retries=1, valid=True,
           checks=checks(structural_distortion=check("structural_distortion", parse_ok=False),
                         energy_source=check("energy_source", parse_ok=False))),
    expected_record("retry_bad", status="not_applicable", eligible=False, eligibility_parse_ok=False, parse_failures=3,
           retries=2),  # asked three times in all, as the release asks (issue 18)
    expected_record("sev_bad", score=math.exp(-0.5), eligible=True, n_minor=1, parse_failures=1, valid=True,
           checks=checks(contact_state=check("contact_state", detected=True, aspect="hand and cup",
                                             evidence="Fingers pass through the cup.", evidence_parse_ok=True,
                                             severity="minor", severity_parse_ok=False))),
    expected_record("empty", status="failed", eligible=True, errors=["detection/energy_source: failed or empty response"],
           checks=checks(energy_source=check("energy_source", detected=None))),
    expected_record("evid_fail", status="failed", eligible=True, errors=["evidence/relative_scale: failed or empty response"],
           checks=checks(relative_scale=check("relative_scale", detected=True))),
]


def run_generate(**kwargs):
    judge = judge_for(GENERATE_SCRIPT)
    ids = [r["id"] for r in GENERATE_EXPECTED]
    result = TerraVis(judge, decision="generate", **kwargs).run([image("gray")] * len(ids), ids=ids)
    return judge, result


def test_generate_mode_exact_records_with_fallbacks():
    _, result = run_generate()
    assert [r.to_json() for r in result.records] == GENERATE_EXPECTED


def test_generate_mode_counts_retries_apart():
    judge, result = run_generate()
    assert stage_counts(judge) == {("generate", "eligibility", False): 5, ("generate", "eligibility", True): 3,
                                   ("generate", "detection", False): 18 * 4, ("generate", "evidence", False): 2,
                                   ("generate", "severity", False): 1}
    assert result.counts == {"eligibility": 5, "retries": 3, "detection": 72, "evidence": 2, "severity": 1}


def test_generate_mode_requests_restrict_the_first_token_and_retries_sample():
    judge, _ = run_generate()
    first = [r for _, r in judge.log if r.meta["stage"] == "eligibility" and r.meta["attempt"] == 0]
    retries = [r for _, r in judge.log if r.meta["stage"] == "eligibility" and r.meta["attempt"] > 0]
    assert all(r.constraint.first_options == ("Yes", "No") and r.decoding.greedy for r in first)
    assert all(r.decoding.max_new_tokens == 1 for r in first)
    assert [r.meta["item"] for r in retries] == ["retry_ok", "retry_bad", "retry_bad"]
    # the release's retries: sampled at 0.4, then 0.6 (a new seed each)
    assert [(r.decoding.temperature, r.decoding.seed) for r in retries] == [(0.4, 1), (0.4, 1), (0.6, 2)]
    assert all(not r.decoding.greedy for r in retries)
    detection = [r for _, r in judge.log if r.meta["stage"] == "detection"]
    assert all(r.constraint.first_options == ("Yes", "No") for r in detection)


def test_no_retries_when_disabled():
    judge, result = run_generate(max_retries=0)
    assert "retries" not in result.counts
    assert result.records[0].status == "not_applicable" and result.records[0].parse_failures == 1


def test_ids_meta_and_bad_inputs():
    judge = judge_for({("0", "eligibility", ""): "No", ("0", "eligibility_reason", ""): '{"reason": "A chart."}'})
    recs = TerraVis(judge).score([image("red")], meta=[{"model": "sd35"}])
    assert recs[0].id == "0" and recs[0].meta == {"model": "sd35"}
    tv = TerraVis(judge)
    with pytest.raises(ValueError, match="no images"):
        tv.score([])
    with pytest.raises(TypeError, match="sequence"):
        tv.score(image("red"))
    with pytest.raises(ValueError, match="unique"):
        tv.score([image("red")] * 2, ids=["a", "a"])
    with pytest.raises(ValueError, match="variant"):
        TerraVis(judge, variant="fancy")
    with pytest.raises(TypeError, match="Judge"):
        TerraVis(object())
    with pytest.raises(ValueError, match="alpha"):
        TerraVis(judge, alpha=2)


def test_records_round_trip_through_jsonl(tmp_path):
    from terravis import load_records, save_records
    _, tv, result = run_choice()
    path = tmp_path / "run.jsonl"
    save_records(path, result.records, result.manifest)
    records, manifest = load_records(path)
    assert [r.to_json() for r in records] == CHOICE_EXPECTED
    assert manifest["pack_version"] == "default-v1" and manifest["backend"] == "replay"
    assert manifest["lam"] == 1.0 and manifest["decoding"]["decision"] == "choice"
    assert "library_version" in manifest and "model" in manifest and "revision" in manifest


def test_retry_temperatures_one_for_all_or_one_per_retry():
    from terravis import WorkflowConfig
    from terravis.asking import retry_temperature_at

    assert [retry_temperature_at((0.4, 0.6), k) for k in (1, 2, 3)] == [0.4, 0.6, 0.6]
    assert retry_temperature_at(0.7, 2) == 0.7
    assert WorkflowConfig().max_retries == 2 and WorkflowConfig().retry_temperature == (0.4, 0.6)
    assert WorkflowConfig(retry_temperature=[0.5]).retry_temperature == (0.5,)
    for bad in ((), (-1.0,), "hot", True):
        with pytest.raises(ValueError, match="retry_temperature"):
            WorkflowConfig(retry_temperature=bad)
    judge, result = run_generate(retry_temperature=0.9, max_retries=1)
    retries = [r for _, r in judge.log if r.meta["stage"] == "eligibility" and r.meta["attempt"] > 0]
    assert [r.decoding.temperature for r in retries] == [0.9, 0.9] and result.counts["retries"] == 2
