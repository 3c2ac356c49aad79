"""The taxonomy as data, and prompt packs: shipped default, user overrides, clear errors."""
import json

import pytest
from PIL import Image
from pydantic import ValidationError

from terravis import TAXONOMY, TYPE_IDS, get_type, load_pack
from terravis import asking
from terravis.taxonomy import types_at

# The 18 names of METHODS.md, by level, in order.
EXPECTED = {
    "object": ["Object identity", "Structural distortion", "Biological anatomy", "Non-biological structure",
               "Texture/surface", "Symbolic content", "Object-context"],
    "interaction": ["Contact state", "Support and stability", "Dynamic response", "Medium interaction",
                    "Optical effect", "Energy source", "Thermal response", "Behavior-event"],
    "scene": ["Relative scale", "Depth-order/occlusion", "Region continuity"],
}


def test_levels_and_names_match_methods():
    assert len(TAXONOMY) == 18 and len(set(TYPE_IDS)) == 18
    for level, names in EXPECTED.items():
        assert [t.name for t in types_at(level)] == names
    assert [len(types_at(lv)) for lv in ("object", "interaction", "scene")] == [7, 8, 3]


def _name_forms(name):
    low = name.lower()
    return {low, low.replace("/", " "), low.replace("-", " "), low.replace("/", " ").replace("-", " ")}


@pytest.mark.parametrize("vtype", TAXONOMY, ids=lambda t: t.id)
def test_question_never_names_its_type(vtype):
    question = vtype.question.lower()
    for form in _name_forms(vtype.name):
        assert form not in question
    assert "?" in question and len(question) > 40


def test_get_type_errors_name_valid_ids():
    assert get_type("relative_scale").level == "scene"
    with pytest.raises(KeyError, match="valid ids"):
        get_type("gravity")


def test_default_pack_loads_and_is_versioned():
    pack = load_pack()
    assert pack.version == "default-v1"
    assert load_pack("default-v1").sha256 == pack.sha256
    assert len(pack.sha256) == 64
    assert pack.options.detection == ("Yes", "No")


def test_detection_requests_share_a_prefix_and_differ_only_in_a_short_suffix():
    pack = load_pack()
    img = Image.new("RGB", (8, 8))
    reqs = [asking.detection_request(pack, img, "a", t) for t in TAXONOMY]
    assert len({r.system for r in reqs}) == 1 and all(r.images[0] is img for r in reqs)
    assert all(r.text.startswith(pack.detection) for r in reqs)
    suffixes = [r.text[len(pack.detection):] for r in reqs]
    assert len(set(suffixes)) == 18
    assert max(len(s) for s in suffixes) < len(pack.system) + len(pack.detection)
    for vtype, suffix in zip(TAXONOMY, suffixes):
        assert vtype.question in suffix


def test_user_pack_dict_overrides_and_records_its_change():
    custom = load_pack({"examples": {"biological_anatomy": [
        {"description": "A hand holding a cup shows six fingers.", "answer": "Yes"}]},
        "questions": {"relative_scale": "Is any animal bigger than a house?"}})
    assert custom.version.startswith("default-v1+") and custom.sha256 != load_pack().sha256
    text = custom.detection_text(get_type("biological_anatomy"))
    assert "six fingers" in text and text.index("six fingers") < text.index("Question:")
    assert "bigger than a house" in custom.detection_text(get_type("relative_scale"))
    assert "Example" not in custom.detection_text(get_type("relative_scale"))
    partial = load_pack({"limits": {"evidence": 40}})
    assert partial.limits == {"reason": 160, "aspect": 60, "evidence": 40}


def test_user_pack_file_round_trips(tmp_path):
    data = load_pack().model_dump(mode="json")
    data["version"] = "mine-1"
    data["answer_prefix"] = "Verdict:\n"
    path = tmp_path / "pack.json"
    path.write_text(json.dumps(data))
    pack = load_pack(path)
    assert pack.version == "mine-1" and pack.answer_prefix == "Verdict:\n"


@pytest.mark.parametrize("bad, match", [
    ({"questions": {"gravity": "Is it falling?"}}, "unknown violation type"),
    ({"severity": "Major or minor?"}, "placeholders"),
    ({"options": {"detection": ["Yes", "Yes"]}}, "distinct"),
    ({"limits": {"reason": 0, "aspect": 10, "evidence": 10}}, "positive"),
    ({"typo_field": 1}, "typo_field"),
])
def test_bad_packs_raise_clear_errors(bad, match):
    with pytest.raises(ValidationError, match=match):
        load_pack(bad)


def test_pack_that_is_not_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_pack(path)


def test_templates_keep_json_braces():
    pack = load_pack()
    text = pack.severity_text("support_stability", "the vase", "It hovers above the table.")
    assert '{"reason": "<one short sentence>"}' in text
    assert "Support and stability" in text and "It hovers above the table." in text
    assert "{aspect}" not in text
    assert all(t.name in pack.holistic_text() for t in TAXONOMY)
