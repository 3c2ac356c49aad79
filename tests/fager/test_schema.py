"""The record schemas: strict, bounded, JSON-schema ready, and able to hold the released records."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from fager.qa_store import read_qa_csv
from fager.records import Verdict
from fager.schema import (
    CATEGORIES, LEVELS, MAX_FACT, CategoryFacts, FactChange, LevelRubric, QAItem, QAItems, QASet,
    QuestionAnswer, ReferenceExtraction, Rubric, Verification,
)

GENERATED_MODELS = [Rubric, ReferenceExtraction, Verification, QAItem, QAItems, QASet, QuestionAnswer]


def _released_verifications(abo):
    path = abo / "intermediate" / "3_verification_results" / "results.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("model", [*GENERATED_MODELS, Verdict], ids=lambda m: m.__name__)
def test_json_schema_is_strict(model):
    schema = model.model_json_schema()
    json.dumps(schema)  # serialisable as handed to a grammar compiler
    assert schema["additionalProperties"] is False
    for definition in schema.get("$defs", {}).values():
        if definition.get("type") == "object":
            assert definition["additionalProperties"] is False, definition["title"]


@pytest.mark.parametrize("model", GENERATED_MODELS, ids=lambda m: m.__name__)
def test_generated_strings_and_lists_are_bounded(model):
    """Every string and array an agent generates has a maximum, so constrained output terminates."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})

    def walk(node, where):
        if "$ref" in node:
            walk(defs[node["$ref"].split("/")[-1]], where)
        elif node.get("type") == "string" and "enum" not in node:
            assert "maxLength" in node, where
        elif node.get("type") == "array":
            assert "maxItems" in node, where
            walk(node["items"], where + "[]")
        elif node.get("type") == "object":
            for name, sub in node.get("properties", {}).items():
                walk(sub, f"{where}.{name}")
        for option in node.get("anyOf", []):
            walk(option, where)

    walk(schema, model.__name__)


def test_rubric_requires_all_levels_and_categories():
    rubric = Rubric.empty().model_dump()
    assert list(rubric) == list(LEVELS)
    assert all(list(level) == list(CATEGORIES) for level in rubric.values())
    del rubric["level_2"]["posture"]
    with pytest.raises(ValidationError, match="posture"):
        Rubric.model_validate(rubric)


def test_rubric_rejects_unknown_keys_and_values():
    rubric = Rubric.empty().model_dump()
    rubric["level_1"]["texture"] = {"importance": "low", "facts": []}
    with pytest.raises(ValidationError, match="texture"):
        Rubric.model_validate(rubric)
    with pytest.raises(ValidationError):
        CategoryFacts(importance="critical", facts=[])
    with pytest.raises(ValidationError):
        CategoryFacts(importance="high", facts=["   "])
    with pytest.raises(ValidationError):
        CategoryFacts(importance="high", facts=["x" * (MAX_FACT + 1)])


def test_rubric_facts_in_canonical_order():
    rubric = Rubric.empty().model_copy(deep=True)
    rubric.level_2.color = CategoryFacts(importance="medium", facts=["red cap"])
    rubric.level_1.others = CategoryFacts(importance="low", facts=["a label"])
    rubric.level_1.existence = CategoryFacts(importance="high", facts=["a bottle", "a box"])
    facts = [(f.level, f.category, f.importance, f.fact) for f in rubric.facts()]
    assert facts == [("level_1", "existence", "high", "a bottle"), ("level_1", "existence", "high", "a box"),
                     ("level_1", "others", "low", "a label"), ("level_2", "color", "medium", "red cap")]


def test_released_verifications_validate_and_match_qa(abo):
    """All 50 released verification records fit the schema, and the released QA set has
    exactly one question per verified fact, in the rubric's canonical order."""
    records = _released_verifications(abo)
    qa_by_index = {s.index: s for s in read_qa_csv(abo / "QA.csv")}
    assert len(records) == 50
    dropped = added = 0
    for record in records:
        verification = Verification.model_validate(
            {k: record[k] for k in ("verified_rubric", "dropped", "added")})
        dropped += len(verification.dropped)
        added += len(verification.added)
        facts = [(f.level, f.category, f.importance, f.fact) for f in verification.verified_rubric.facts()]
        qa = qa_by_index[record["id"]]
        assert [(i.level, i.category, i.importance, i.source_fact) for i in qa.items] == facts
    assert (dropped, added) == (178, 141)


def test_fact_change_reads_release_name_and_checks_direction():
    change = FactChange.model_validate({"level": "level_2", "category": "color", "fact": "The cap is red.",
                                        "reason": "not_visually_verifiable", "short_rationale": ["Too small."]})
    assert change.rationale == ["Too small."]
    assert "short_rationale" not in change.model_dump()
    assert FactChange(level="level_1", category="shape", fact="Round.", reason="malformed",
                      rationale="one line").rationale == ["one line"]
    empty = Rubric.empty()
    with pytest.raises(ValidationError, match="drop reason"):
        Verification(verified_rubric=empty, dropped=[], added=[change])
    added = change.model_copy(update={"reason": "missing_necessary_fact"})
    with pytest.raises(ValidationError, match="add reason"):
        Verification(verified_rubric=empty, dropped=[added], added=[])


def test_reference_extraction_bounds():
    extraction = ReferenceExtraction(status="partial", summary="An amber bottle.", visual_elements=["black cap"],
                                     confidence=0.9, notes="")
    assert extraction.status == "partial"
    with pytest.raises(ValidationError):
        ReferenceExtraction(status="fine", summary="", visual_elements=[], confidence=0.5, notes="")
    with pytest.raises(ValidationError):
        ReferenceExtraction(status="ok", summary="", visual_elements=[], confidence=1.5, notes="")


def test_qa_set_rejects_duplicate_questions():
    item = QAItem(question="Is a bottle shown?", level="level_1", category="existence", importance="high",
                  source_fact="A bottle is shown.")
    with pytest.raises(ValidationError, match="duplicate"):
        QASet(prompt="p", items=[item, item])
    QASet(prompt="p", items=[item, item.model_copy(update={"level": "level_2"})])


def test_question_answer_normalises_case_only():
    assert QuestionAnswer(answer=" Yes ", rationale="seen").answer == "yes"
    with pytest.raises(ValidationError):
        QuestionAnswer(answer="maybe", rationale="")
    with pytest.raises(ValidationError):
        QuestionAnswer(answer="yes")  # the rationale is required, as the schema says


def test_level_rubric_empty_has_no_facts():
    assert all(getattr(LevelRubric.empty(), c).facts == [] for c in CATEGORIES)
    assert Rubric.empty().facts() == []
