"""Pack loading and overrides, decoding schemas, agent output reading, and reference providers."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from fager.asking import (
    AgentError, FagerAgents, QuestionList, format_evidence, format_facts, qa_items, read_output, to_output,
)
from fager.schema import inline_refs, model_schema, narrow, qa_schema, verification_schema
from fager.pack import AGENTS, Limits, fill, load_pack
from fager.references import (
    CallableReferences, FolderReferences, MappingReferences, NoReferences, as_provider, digest, load_references,
)
from fager.schema import FactEntry, QuestionAnswer, ReferenceExtraction, Rubric, Verification
from vlmjudge.requests import Answer

from fagent_helpers import keyed_replay, noise


# ---- pack ---------------------------------------------------------------------------------------

def test_default_pack_has_every_agent_and_a_stable_key():
    pack = load_pack()
    assert set(pack.agents) == set(AGENTS) and pack.version == "default-v1"
    assert pack.key == load_pack("default-v1").key and pack.key.startswith("default-v1#")
    assert "{question}" in pack.agents["evaluation"].user and pack.baseline.options == ("Yes", "No")


def test_user_override_replaces_one_template_and_renames_the_version(tmp_path):
    base = load_pack()
    over = load_pack({"agents": {"evaluation": {"user": "Q: {question}", "limits": {"string": 20}}}})
    assert over.agents["evaluation"].user == "Q: {question}"
    assert over.agents["evaluation"].limits == Limits(string=20, items=base.agents["evaluation"].limits.items)
    assert over.agents["proposal"] == base.agents["proposal"]
    assert over.version.startswith("default-v1+") and over.key != base.key
    path = tmp_path / "pack.json"
    path.write_text(json.dumps({"version": "mine", "agents": {"qa": {"system": "Short."}}}))
    assert load_pack(path).version == "mine" and load_pack(path).agents["qa"].system == "Short."
    assert load_pack(over) is over


@pytest.mark.parametrize("bad, message", [
    ({"agents": {"evaluation": {"user": "no placeholder"}}}, "lacks placeholders"),
    ({"agents": {"judge": {"user": "x", "max_new_tokens": 1, "limits": {"string": 1, "items": 1}}}}, "unknown"),
    ({"agents": {"qa": {"limits": {"string": 0}}}}, "greater than or equal to 1"),
    ({"baseline": {"options": ["Yes", "Yes"]}}, "distinct"),
])
def test_bad_packs_are_rejected(bad, message):
    with pytest.raises(ValidationError, match=message):
        load_pack(bad)


def test_bad_pack_sources(tmp_path):
    with pytest.raises(FileNotFoundError, match="no shipped FAGER pack"):
        load_pack("nonexistent-pack")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_pack(tmp_path / "broken.json")
    with pytest.raises(TypeError):
        load_pack(42)


def test_fill_leaves_other_braces_alone():
    assert fill('{"q": "{question}"} {other}', question="Is it red?") == '{"q": "Is it red?"} {other}'


# ---- decoding schemas -------------------------------------------------------------------------------

def test_narrowed_rubric_schema_has_the_pack_bounds_and_no_refs():
    schema = model_schema(Rubric, Limits(string=12, items=2))
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    facts = schema["properties"]["level_2"]["properties"]["color"]["properties"]["facts"]
    assert facts["maxItems"] == 2 and facts["items"]["maxLength"] == 12 and facts["items"]["minLength"] == 1
    assert schema["properties"]["level_1"]["properties"]["shape"]["properties"]["importance"]["enum"] == \
        ["high", "medium", "low"]


def test_narrow_keeps_the_tighter_bound_and_list_minimums():
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 5}, "b": {"type": "array", "minItems": 3, "items": {"type": "string"}},
        "c": {"enum": ["x"]}}}
    out = narrow(schema, Limits(string=10, items=2))
    assert out["properties"]["a"]["maxLength"] == 5
    assert out["properties"]["b"]["maxItems"] == 3  # never below the list's own minimum
    assert out["properties"]["b"]["items"]["maxLength"] == 10 and "maxLength" not in out["properties"]["c"]


def test_verification_schema_splits_reasons_by_direction():
    schema = verification_schema(Verification, Limits(string=50, items=3))
    dropped = schema["properties"]["dropped"]["items"]["properties"]["reason"]["enum"]
    added = schema["properties"]["added"]["items"]["properties"]["reason"]["enum"]
    assert dropped == ["not_necessary", "not_visually_verifiable", "malformed"]
    assert added == ["missing_necessary_fact"]
    assert schema["properties"]["dropped"]["items"]["properties"]["rationale"]["minItems"] == 1


def test_qa_schema_pins_the_number_of_questions():
    schema = qa_schema(3, Limits(string=500, items=99))
    questions = schema["properties"]["questions"]
    assert len(questions["prefixItems"]) == 3 and questions["minItems"] == questions["maxItems"] == 3
    assert questions["items"] is False and questions["prefixItems"][0]["maxLength"] == 300  # MAX_QUESTION
    with pytest.raises(ValueError):
        qa_schema(0, Limits(string=5, items=5))


def test_schemas_compile_to_grammars():
    pytest.importorskip("xgrammar")
    from vlmjudge.grammar import json_schema_to_ebnf
    limits = Limits(string=20, items=2)
    for schema in (model_schema(Rubric, limits), model_schema(ReferenceExtraction, limits),
                   verification_schema(Verification, limits), model_schema(QuestionAnswer, limits),
                   qa_schema(4, limits)):
        assert "root ::=" in json_schema_to_ebnf(schema)


def test_inline_refs_rejects_a_dangling_reference():
    with pytest.raises(ValueError, match="no definition"):
        inline_refs({"properties": {"a": {"$ref": "#/$defs/Missing"}}})


# ---- reading agent outputs ------------------------------------------------------------------------------

def test_read_output_accepts_fenced_json_and_reports_schema_errors():
    answer = read_output('```json\n{"answer": "Yes", "rationale": "a red cap"}\n```', QuestionAnswer)
    assert (answer.answer, answer.rationale) == ("yes", "a red cap")
    with pytest.raises(AgentError, match="no JSON object"):
        read_output("yes it is", QuestionAnswer)
    with pytest.raises(AgentError, match="invalid JSON"):
        read_output('{"answer": yes}', QuestionAnswer)
    with pytest.raises(AgentError, match="QuestionAnswer invalid at answer"):
        read_output('{"answer": "maybe", "rationale": ""}', QuestionAnswer)
    with pytest.raises(AgentError, match="empty"):
        read_output("  ", QuestionAnswer)


def test_failed_and_truncated_answers_are_errors():
    assert to_output("qa", Answer("", "error"), QuestionList).error == "the judge failed to answer"
    truncated = to_output("qa", Answer('{"questions": ["Is', "length", 100), QuestionList)
    assert truncated.value is None and truncated.error.startswith("ran out of tokens")


def test_qa_items_pair_questions_with_facts_in_order():
    facts = [FactEntry(level="level_1", category="existence", importance="high", fact="A mug is shown"),
             FactEntry(level="level_3", category="color", importance="low", fact="The mug is blue")]
    out = qa_items(to_output("qa", Answer('{"questions": [" Is a mug shown? ", "Is it blue?"]}'), QuestionList), facts)
    assert [(i.question, i.level, i.source_fact) for i in out.value.items] == [
        ("Is a mug shown?", "level_1", "A mug is shown"), ("Is it blue?", "level_3", "The mug is blue")]
    blank = qa_items(to_output("qa", Answer('{"questions": ["   ", "x"]}'), QuestionList), facts)
    assert blank.value is None and blank.error.startswith("question 0 invalid: String should have at least 1")


def test_formatting_for_the_agents():
    facts = [FactEntry(level="level_2", category="counting", importance="high", fact="Three wheels")]
    assert format_facts(facts) == "1. [level_2 / counting / high] Three wheels"
    ok = ReferenceExtraction(status="ok", summary="A tricycle.", visual_elements=["red frame", "3 wheels"],
                             confidence=0.9, notes="")
    none = ReferenceExtraction(status="none", summary="A cat.", visual_elements=[], confidence=0.1, notes="")
    text = format_evidence([none, ok])
    assert "reference 2 (ok, confidence 0.90)" in text and "red frame; 3 wheels" in text and "cat" not in text
    assert format_evidence([]) == "(no reference evidence)"


def test_agent_requests_carry_meta_budget_and_grammar():
    agents = FagerAgents(keyed_replay({}), pack={"agents": {"evaluation": {"max_new_tokens": 33}}})
    request = agents.evaluation_request(noise(1), "Is it red?", "7", 4)
    assert request.meta == {"item_id": "7", "question_id": 4, "stage": "evaluation"}
    assert request.decoding.max_new_tokens == 33 and request.decoding.greedy
    assert request.constraint.schema["properties"]["answer"]["enum"] == ["yes", "no", "unknown"]
    assert request.text.endswith("Question: Is it red?") and request.system
    with pytest.raises(ValueError, match="regenerate or edit"):
        agents.feedback_request("keep", noise(1), "p", [], "7")
    with pytest.raises(ValueError, match="needs a judge"):
        FagerAgents(None)


# ---- references ---------------------------------------------------------------------------------------

def test_folder_references_by_prompt_id(tmp_path):
    noise(1).save(tmp_path / "12.png")
    noise(2).save(tmp_path / "12.5.png")  # another id, not a second image of "12"
    (tmp_path / "12").mkdir()
    noise(3).save(tmp_path / "12" / "b.jpg")
    noise(4).save(tmp_path / "12" / "a.png")
    (tmp_path / "12" / "notes.txt").write_text("not an image")
    found = FolderReferences(tmp_path).references("12", "a prompt")
    assert [p.name for p in found] == ["12.png", "a.png", "b.jpg"]
    assert FolderReferences(tmp_path, max_images=1).references("12", "x") == found[:1]
    assert FolderReferences(tmp_path).references("99", "x") == []
    with pytest.raises(ValueError, match="cannot name"):
        FolderReferences(tmp_path).references("../etc", "x")
    with pytest.raises(FileNotFoundError):
        FolderReferences(tmp_path / "absent")


def test_providers_from_every_source(tmp_path):
    image = noise(5)
    assert isinstance(as_provider(None), NoReferences) and as_provider(None).references("1", "p") == []
    assert isinstance(as_provider(tmp_path), FolderReferences)
    assert isinstance(as_provider({"1": image}), MappingReferences)
    assert as_provider({"1": image}).references("1", "p") == [image]
    calls = []
    provider = as_provider(lambda pid, prompt: calls.append((pid, prompt)) or image)
    assert isinstance(provider, CallableReferences) and provider.references("3", "a kite") == [image]
    assert calls == [("3", "a kite")]
    custom = MappingReferences({})
    assert as_provider(custom) is custom
    with pytest.raises(TypeError):
        as_provider(42)


def test_load_references_converts_and_names_bad_images():
    loaded = load_references(MappingReferences({"1": [noise(1), noise(2)]}), ["1", "2"], ["p", "q"], max_images=1)
    assert [len(x) for x in loaded] == [1, 0] and loaded[0][0].mode == "RGB"
    with pytest.raises(ValueError, match="prompt id '1'"):
        load_references(MappingReferences({"1": b"not an image"}), ["1"], ["p"])


def test_reference_digest_depends_on_pixels_only():
    assert digest([]) == "none"
    assert digest([noise(1)]) == digest([noise(1).copy()]) != digest([noise(2)])


# ---- baseline ---------------------------------------------------------------------------------------------

def test_vqascore_baseline_through_replay_feeds_the_ab_test():
    from fager.baselines import BASELINE_QUESTION_ID, VQAScoreBaseline, baseline_ab_test
    probs = {"1:factual": 0.9, "1:generated": 0.4, "2:factual": 0.2, "2:generated": 0.6,
             "3:factual": 0.5, "3:generated": 0.5}
    judge = keyed_replay({(k, BASELINE_QUESTION_ID): {"probs": {"Yes": p, "No": 1 - p}} for k, p in probs.items()})
    baseline = VQAScoreBaseline(judge)
    prompts = ["a mug", "a kite", "a boat"]
    report = baseline_ab_test(baseline, [noise(i) for i in range(3)], [noise(10 + i) for i in range(3)], prompts,
                              ["1", "2", "3"])
    # pair 1: 0.9 > 0.4 correct; pair 2: 0.2 < 0.6 wrong; pair 3: tie, correct under "full"
    assert (report.pairs, report.correct, report.wrong, report.ties) == (3, 2, 1, 1)
    assert report.margins["1"] == pytest.approx(0.5)
    request = judge.log[0][1]
    assert request.text == 'Does this image show "a mug"? Answer Yes or No.' and len(request.images) == 1
    assert [op for op, _ in judge.log] == ["choice_probs"] * 6
    failing = keyed_replay({(k, BASELINE_QUESTION_ID): None for k in probs})
    assert VQAScoreBaseline(failing).score([noise(1)], ["a mug"], ["1:factual"]) == [None]
    with pytest.raises(ValueError, match="no score"):
        baseline_ab_test(VQAScoreBaseline(failing), [noise(1)], [noise(2)], ["a mug"], ["1"])
    custom = VQAScoreBaseline(judge, pack={"baseline": {"user": "Is this {prompt}?"}})
    assert custom.requests([noise(1)], ["a mug"])[0].text == "Is this a mug?"
