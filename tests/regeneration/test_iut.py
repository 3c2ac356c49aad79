"""IUT schema, tolerant parsing, token budgets, the prompt pack, and the four-stage builder over a replay judge."""
from __future__ import annotations

import json
import re

import pytest
from regen_helpers import CAT, iut_answers, reference_images, replay

from regeneration.asking.iut import IUTResult, build_iuts, initial_prompts
from regeneration.parsing import ParseFailure, extract_json, parse_answer, token_budget
from regeneration.pack import load_pack
from regeneration.schema import (
    ATTRIBUTE_MODELS,
    IUT,
    CaptionStage,
    Rating,
    prompt_list_schema,
    relationships_model,
)
from vlmjudge.requests import Answer


def test_extract_json_reads_as_the_release_by_default():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! {"a": {"b": 2}} hope this helps') == {"a": {"b": 2}}
    assert extract_json('[{"a": 1}]') == {"a": 1}  # first { to last }
    for text in ('{"a": "x\ty"}', '{"a": 1} and {"b": 2}', "no braces here"):
        with pytest.raises(ValueError):
            extract_json(text)


def test_extract_json_tolerant_reading():
    assert extract_json('```json\n{"a": 1}\n```', reading="tolerant") == {"a": 1}
    assert extract_json('Sure! {"a": "x\ty"} hope this helps', reading="tolerant") == {"a": "x\ty"}
    assert extract_json('{"a": "line\nbreak"}', reading="tolerant") == {"a": "line\nbreak"}  # raw control char
    assert extract_json('{"a": 1} and {"b": 2}', reading="tolerant") == {"a": 1}  # the first object
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("no braces here", reading="tolerant")


def test_parse_answer_failures_are_reported():
    assert parse_answer(Answer('{"reason": "ok", "score": 4}'), Rating, "content").score == 4
    bad = parse_answer(Answer('{"reason": "ok", "score": 7}'), Rating, "content")
    assert isinstance(bad, ParseFailure) and "score" in bad.reason and bad.stage == "content"
    cut = parse_answer(Answer('{"reason": "o', "length"), Rating, "content")
    assert isinstance(cut, ParseFailure) and "token budget" in cut.reason
    err = parse_answer(Answer("", "error"), Rating, "content")
    assert isinstance(err, ParseFailure) and "no answer" in err.reason


def test_token_budget_by_hand():
    # {"reason": str<=200, "score": enum}: (2*200+4) + 6 + 6 ; enum: len("5")+2 + 5 + 6 ; +4
    assert token_budget(Rating.model_json_schema()) == (404 + len("reason") + 6) + (3 + len("score") + 6) + 4
    # a list of 2 strings of <= 400: 2 * (804 + 2) + 4 + len("prompts") + 6 + 4
    assert token_budget(prompt_list_schema(2)) == 2 * 806 + 4 + 7 + 6 + 4
    assert token_budget({"type": "string"}) == 4096  # unbounded -> cap
    assert token_budget(CaptionStage.model_json_schema()) < 4096


def test_schemas_are_bounded_and_closed():
    for model in (CaptionStage, *ATTRIBUTE_MODELS.values()):
        schema = model.model_json_schema()
        assert schema.get("additionalProperties") is False
        assert token_budget(schema) < 4096
    assert set(ATTRIBUTE_MODELS["person"].model_fields) >= {"posture", "expression", "clothing", "color"}
    assert set(ATTRIBUTE_MODELS["animal"].model_fields) >= {"species", "posture", "texture"}
    assert set(ATTRIBUTE_MODELS["object"].model_fields) >= {"function", "state", "material"}
    rel = relationships_model(["cat", "sofa"])
    assert rel["properties"]["relationships"]["items"]["properties"]["subject"]["enum"] == ["cat", "sofa"]


def test_pack_overrides_and_checks():
    pack = load_pack()
    assert pack.version == "default-v1" and set(pack.aspects) >= {"overall", "style", "color", "detail"}
    custom = load_pack({"perceptual": "Rate this picture 1-5. Answer in JSON."})
    # versioned as every method versions an override (vlmjudge.packs): the default plus a digest of the changes
    assert re.fullmatch(r"default-v1\+[0-9a-f]{8}", custom.version) and custom.perceptual.startswith("Rate this")
    assert load_pack({"perceptual": "Rate this picture 1-5. Answer in JSON."}).version == custom.version
    assert load_pack({"perceptual": "Rate it 1-5. Answer in JSON."}).version != custom.version
    assert custom.fingerprint() != pack.fingerprint() and custom.content == pack.content
    with pytest.raises(ValueError, match="unknown placeholders"):
        load_pack({"content": "Compare {prompt}"})
    with pytest.raises(KeyError, match="unknown aspect"):
        pack.aspect("smell")


def test_build_iuts_four_stages_batched():
    refs = reference_images(3)
    judge = replay(iut_answers(refs))
    results = build_iuts(judge, list(refs.values()), list(refs))
    assert [r.item for r in results] == list(refs) and all(r.valid and not r.failures for r in results)
    iut = results[0].iut
    assert iut.global_features.lighting == "soft daylight"
    assert [(o.name, o.type) for o in iut.objects] == [("cat", "animal"), ("sofa", "object")]
    assert iut.objects[0].attributes["species"] == "tabby cat" and iut.objects[1].attributes["function"] == "seat"
    assert iut.relationships[0].relation == "lies on"
    # one generate call per stage, each over all images (4 stages -> 4 batches with batch_size 8)
    stages = [r.meta["stage"] for _, r in judge.log]
    assert stages == ["iut_caption"] * 3 + ["iut_objects"] * 3 + ["iut_attributes"] * 6 + ["iut_relations"] * 3
    assert judge.stats.forward_batches == 4
    # round trip
    assert IUTResult.from_json(json.loads(json.dumps(results[0].to_json()))).iut == iut
    text = iut.to_prompt()
    assert text.startswith("a cat on a sofa (ref0)") and "tabby cat" in text and "cat lies on sofa" in text
    assert "none" not in text.split(", ")  # uninformative attribute values are left out


def test_failures_are_counted_not_hidden():
    refs = reference_images(3)
    ans = iut_answers(refs)
    ans[("iut_caption", "ref0", 0, 0)] = "I cannot describe this."
    ans[("iut_attributes", "ref1", 0, 1)] = json.dumps({"color": "grey"})  # misses fields
    ans[("iut_relations", "ref2", 0, 0)] = json.dumps(
        {"relationships": [{"subject": "cat", "relation": "on", "object": "table"}]})  # unknown name
    results = build_iuts(replay(ans), list(refs.values()), list(refs))
    assert results[0].iut is None and results[0].failures[0].stage == "iut_caption"
    assert results[1].valid and results[1].iut.objects[1].attributes == {}
    assert [f.stage for f in results[1].failures] == ["iut_attributes"]
    assert results[2].iut.relationships == [] and results[2].failures[0].stage == "iut_relations"


def test_duplicate_names_and_single_object_skip_relations():
    refs = reference_images(1)
    ans = iut_answers(refs, objects={"objects": [{"name": "dog", "type": "animal"}]})
    ans[("iut_attributes", "ref0", 0, 0)] = json.dumps(CAT)
    judge = replay(ans)
    (result,) = build_iuts(judge, list(refs.values()), list(refs))
    assert [o.name for o in result.iut.objects] == ["dog"] and result.iut.relationships == []
    assert "iut_relations" not in [r.meta["stage"] for _, r in judge.log]
    from regeneration.asking.iut import _unique_names
    assert _unique_names(["dog", "Dog", "cat", "dog"]) == ["dog", "Dog 2", "cat", "dog 3"]


def test_initial_prompts_template_text_judge_and_fallback():
    refs = reference_images(2)
    results = build_iuts(replay(iut_answers(refs)), list(refs.values()), list(refs))
    templated = initial_prompts(results)
    assert templated[0].source == "template" and templated[0].prompt == results[0].iut.to_prompt()
    text_judge = replay({("initial_prompt", "ref0", 0, 0): json.dumps({"prompt": "an orange cat on a sofa"}),
                         ("initial_prompt", "ref1", 0, 0): "not json"})
    written = initial_prompts(results, text_judge)
    assert (written[0].prompt, written[0].source) == ("an orange cat on a sofa", "text_judge")
    assert written[1].source == "template" and written[1].failures[0].stage == "initial_prompt"
    assert all(not r.images for _, r in text_judge.log)  # text-only requests
    assert '"lighting":"soft daylight"' in text_judge.log[0][1].text


def test_iut_rejects_unbounded_input():
    with pytest.raises(ValueError):
        IUT.model_validate({"description": "x" * 500, "global_features": {
            "style": "", "lighting": "", "color_palette": "", "composition": ""}})
