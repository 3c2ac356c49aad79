"""What FAGER asks a model to produce: the pydantic models, the QA sets built from them, and the
decoding schemas the agents answer under.

The models an agent fills in (Rubric, ReferenceExtraction, Verification, QAItem, QuestionAnswer)
forbid unknown keys and bound every string and list. A constrained decoder can only promise valid
JSON if every string and list closes within the token budget and the grammar rules out what the
model would reject afterwards, so each agent's decoding schema is its model's JSON schema with
references inlined, bounds lowered to the pack's limits and the add/drop reasons split by
direction. QA generation asks for the questions only, one per fact in a list of pinned length;
the QA items are then assembled from the rubric and validated as `QAItems`.
"""
from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from vlmjudge.grammar import schema_nodes

from .pack import Limits

#: The rubric's three levels: the core subject and scene, key components and attributes, fine details.
LEVELS: tuple[str, ...] = ("level_1", "level_2", "level_3")
#: The nine categories a fact is sorted into.
CATEGORIES: tuple[str, ...] = (
    "existence", "counting", "relation", "shape", "size", "color", "posture", "scene", "others",
)
ANSWERS: tuple[str, ...] = ("yes", "no", "unknown")
DROP_REASONS: tuple[str, ...] = ("not_necessary", "not_visually_verifiable", "malformed")
ADD_REASONS: tuple[str, ...] = ("missing_necessary_fact",)

Level = Literal["level_1", "level_2", "level_3"]
Category = Literal["existence", "counting", "relation", "shape", "size", "color", "posture", "scene", "others"]
Importance = Literal["high", "medium", "low"]
Answer = Literal["yes", "no", "unknown"]
Decision = Literal["keep", "edit", "regenerate"]
ChangeReason = Literal["not_necessary", "not_visually_verifiable", "malformed", "missing_necessary_fact"]
ExtractionStatus = Literal["ok", "partial", "none"]

# Bounds: generous against the released data (longest fact 205 chars, longest question
# 139, longest rationale 135, at most 7 facts in a category), tight enough to terminate.
MAX_FACT = 400
MAX_FACTS_PER_CATEGORY = 16
MAX_QUESTION = 300
MAX_RATIONALE = 600
MAX_PROMPT = 4000
MAX_CHANGES = 64
MAX_QA_ITEMS = 3 * 9 * MAX_FACTS_PER_CATEGORY

FactText = Annotated[str, Field(min_length=1, max_length=MAX_FACT)]
RationaleText = Annotated[str, Field(max_length=MAX_RATIONALE)]


class StrictModel(BaseModel):
    """Base: unknown keys are an error, so a schema-drifting model output is caught."""

    model_config = ConfigDict(extra="forbid")


class CategoryFacts(StrictModel):
    """The facts one rubric category requires, with how much they matter.

    Examples:
        >>> CategoryFacts(importance="high", facts=["a red cup"]).facts
        ['a red cup']
        >>> from pydantic import ValidationError
        >>> try:
        ...     CategoryFacts(importance="high", facts=["  "])
        ... except ValidationError as error:
        ...     print(error.errors()[0]["msg"])
        Value error, a fact must not be blank
    """

    importance: Importance
    facts: list[FactText] = Field(max_length=MAX_FACTS_PER_CATEGORY)

    @field_validator("facts")
    @classmethod
    def _facts_nonblank(cls, facts: list[str]) -> list[str]:
        if any(not fact.strip() for fact in facts):
            raise ValueError("a fact must not be blank")
        return facts


def _empty_category() -> CategoryFacts:
    return CategoryFacts(importance="low", facts=[])


class LevelRubric(StrictModel):
    """One level of the rubric: the nine categories, always all present.

    Examples:
        >>> level = LevelRubric.empty()
        >>> list(LevelRubric.model_fields) == list(CATEGORIES), level.color.facts
        (True, [])
    """

    existence: CategoryFacts
    counting: CategoryFacts
    relation: CategoryFacts
    shape: CategoryFacts
    size: CategoryFacts
    color: CategoryFacts
    posture: CategoryFacts
    scene: CategoryFacts
    others: CategoryFacts

    @classmethod
    def empty(cls) -> "LevelRubric":
        """A level with no facts, the neutral starting point for building rubrics by hand."""
        return cls(**{c: _empty_category() for c in CATEGORIES})


class FactEntry(StrictModel):
    """One fact with its place in the rubric, the unit that becomes one question."""

    level: Level
    category: Category
    importance: Importance
    fact: str


class Rubric(StrictModel):
    """The three-level factual rubric (coarse identity -> key components -> fine details).

    Examples:
        Facts come out level by level, in category order:

        >>> rubric = Rubric.empty()
        >>> rubric.level_1.existence = CategoryFacts(importance="high", facts=["a cup", "a table"])
        >>> rubric.level_2.color = CategoryFacts(importance="medium", facts=["the cup is red"])
        >>> [(f.level, f.category, f.fact) for f in rubric.facts()]  # doctest: +NORMALIZE_WHITESPACE
        [('level_1', 'existence', 'a cup'), ('level_1', 'existence', 'a table'),
         ('level_2', 'color', 'the cup is red')]
    """

    level_1: LevelRubric
    level_2: LevelRubric
    level_3: LevelRubric

    @classmethod
    def empty(cls) -> "Rubric":
        """A rubric with no facts."""
        return cls(level_1=LevelRubric.empty(), level_2=LevelRubric.empty(), level_3=LevelRubric.empty())

    def facts(self) -> list[FactEntry]:
        """All facts in canonical order (level, then category order, then listed order)."""
        out = []
        for level in LEVELS:
            level_rubric: LevelRubric = getattr(self, level)
            for category in CATEGORIES:
                entry: CategoryFacts = getattr(level_rubric, category)
                out.extend(FactEntry(level=level, category=category, importance=entry.importance, fact=f)
                           for f in entry.facts)
        return out


class ReferenceExtraction(StrictModel):
    """What the reference-guided agent saw in reference images: visible evidence only.

    Examples:
        >>> ReferenceExtraction(status="partial", summary="A cup on a desk.", visual_elements=["red cup"],
        ...                     confidence=0.7, notes="").status
        'partial'
    """

    status: ExtractionStatus
    summary: str = Field(max_length=1000)
    visual_elements: list[FactText] = Field(max_length=40)
    confidence: float = Field(ge=0.0, le=1.0)
    notes: str = Field(max_length=1000)


class FactChange(StrictModel):
    """One fact the verification agent dropped or added, with why.

    Examples:
        The release's `short_rationale` is read too, and one string becomes a list:

        >>> FactChange(level="level_3", category="others", fact="the cup smells of coffee",
        ...            reason="not_visually_verifiable", short_rationale="A smell cannot be seen.").rationale
        ['A smell cannot be seen.']
    """

    level: Level
    category: Category
    fact: str = Field(min_length=1, max_length=MAX_FACT)
    reason: ChangeReason
    # The release calls this field `short_rationale`; both names are read.
    rationale: list[RationaleText] = Field(min_length=1, max_length=4,
                                           validation_alias=AliasChoices("rationale", "short_rationale"))

    @field_validator("rationale", mode="before")
    @classmethod
    def _one_string_is_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class Verification(StrictModel):
    """The verified rubric plus the explicit drop/add decisions that produced it.

    Examples:
        >>> drop = FactChange(level="level_3", category="others", fact="fresh coffee", reason="not_visually_verifiable",
        ...                   rationale="Not visible.")
        >>> len(Verification(verified_rubric=Rubric.empty(), dropped=[drop], added=[]).dropped)
        1
        >>> from pydantic import ValidationError
        >>> try:
        ...     Verification(verified_rubric=Rubric.empty(), dropped=[], added=[drop])
        ... except ValidationError as error:
        ...     print(error.errors()[0]["msg"])
        Value error, added fact has a drop reason 'not_visually_verifiable': 'fresh coffee'
    """

    verified_rubric: Rubric
    dropped: list[FactChange] = Field(max_length=MAX_CHANGES)
    added: list[FactChange] = Field(max_length=MAX_CHANGES)

    @model_validator(mode="after")
    def _reasons_match_direction(self) -> "Verification":
        for change in self.dropped:
            if change.reason not in DROP_REASONS:
                raise ValueError(f"dropped fact has an add reason {change.reason!r}: {change.fact!r}")
        for change in self.added:
            if change.reason not in ADD_REASONS:
                raise ValueError(f"added fact has a drop reason {change.reason!r}: {change.fact!r}")
        return self


class QAItem(StrictModel):
    """One yes-expected question generated from exactly one rubric fact.

    Examples:
        >>> QAItem(question="Is there a cup?", level="level_1", category="existence", importance="high",
        ...        source_fact="a cup").question
        'Is there a cup?'
    """

    question: str = Field(min_length=1, max_length=MAX_QUESTION)
    level: Level
    category: Category
    importance: Importance
    source_fact: str = Field(min_length=1, max_length=MAX_FACT)


class QAItems(StrictModel):
    """The QA agent's whole output for one rubric (the shape a constrained decoder fills)."""

    items: list[QAItem] = Field(max_length=MAX_QA_ITEMS)


class QASet(StrictModel):
    """A prompt's QA items in evaluation order, with the dataset's id for the prompt if any.

    Examples:
        A question may appear once per level:

        >>> item = QAItem(question="Is there a cup?", level="level_1", category="existence", importance="high",
        ...               source_fact="a cup")
        >>> QASet(prompt="a red cup", index="7", items=[item]).index
        '7'
        >>> from pydantic import ValidationError
        >>> try:
        ...     QASet(prompt="a red cup", items=[item, item])
        ... except ValidationError as error:
        ...     print(error.errors()[0]["msg"])
        Value error, duplicate question in level_1: 'Is there a cup?'
    """

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT)
    index: str | None = Field(default=None, max_length=200)
    items: list[QAItem] = Field(max_length=MAX_QA_ITEMS)

    @model_validator(mode="after")
    def _unique_questions(self) -> "QASet":
        seen: set[tuple[str, str]] = set()
        for item in self.items:
            key = (item.level, item.question)
            if key in seen:
                raise ValueError(f"duplicate question in {item.level}: {item.question!r}")
            seen.add(key)
        return self


class QuestionAnswer(StrictModel):
    """The evaluation agent's answer to one question: yes/no/unknown and one sentence why.

    Examples:
        >>> QuestionAnswer(answer=" Yes ", rationale="A red cup stands on the table.").answer
        'yes'
    """

    answer: Answer
    rationale: RationaleText

    @field_validator("answer", mode="before")
    @classmethod
    def _normalise_answer(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


# -- decoding schemas: a model's JSON schema narrowed for a constrained decoder ---------------
def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every local `$ref` replaced by a copy of its definition (no `$defs`)."""
    definitions = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                if name not in definitions:
                    raise ValueError(f"schema reference {node['$ref']!r} has no definition")
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**copy.deepcopy(definitions[name]), **extra})
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(schema)


def narrow(schema: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """A copy with every free string at most `limits.string` characters and every list at most
    `limits.items` items (never below a list's own minimum); titles and descriptions dropped."""
    out = inline_refs(schema)
    for node in schema_nodes(out):
        node.pop("title", None)
        node.pop("description", None)
        if node.get("type") == "string" and not {"enum", "const", "pattern"} & node.keys():
            node["maxLength"] = min(node.get("maxLength", limits.string), limits.string)
            node["minLength"] = min(node.get("minLength", 0), node["maxLength"])
        if node.get("type") == "array" and "prefixItems" not in node:
            floor = node.get("minItems", 0)
            node["maxItems"] = max(floor, min(node.get("maxItems", limits.items), limits.items))
    return out


def model_schema(model: type[BaseModel], limits: Limits) -> dict[str, Any]:
    """The decoding schema of a pydantic model under the pack's limits."""
    return narrow(model.model_json_schema(), limits)


def verification_schema(model: type[BaseModel], limits: Limits) -> dict[str, Any]:
    """The Verification schema with `dropped` allowing only drop reasons and `added` only add reasons."""
    schema = model_schema(model, limits)
    for field, reasons in (("dropped", DROP_REASONS), ("added", ADD_REASONS)):
        reason = schema["properties"][field]["items"]["properties"]["reason"]
        reason.pop("const", None)
        reason["enum"] = list(reasons)
    return schema


def qa_schema(n_facts: int, limits: Limits) -> dict[str, Any]:
    """The QA agent's schema: exactly `n_facts` questions, in fact order, each 1..limits.string
    characters. The facts' level, category, importance and text are not generated: they are
    copied from the rubric when the questions become `QAItems`, so they cannot drift, and
    the decoder spends no tokens on them."""
    if n_facts < 1:
        raise ValueError("a QA schema needs at least one fact")
    question = {"type": "string", "minLength": 1, "maxLength": min(limits.string, MAX_QUESTION)}
    questions = {"type": "array", "prefixItems": [question] * n_facts, "items": False,
                 "minItems": n_facts, "maxItems": n_facts}
    return {"type": "object", "properties": {"questions": questions}, "required": ["questions"],
            "additionalProperties": False}
