"""Pydantic models for every JSON the judge returns in Image Regeneration: the Image Understanding
Tree (IUT), the stage answers it is built from, prompt lists, feedback and 1-5 ratings.

Every string and list is bounded, so grammar-constrained decoding always closes within
its token budget, and `extra="forbid"` makes the schema closed (no stray keys).
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

MAX_OBJECTS = 5
MAX_RELATIONS = 6
MAX_DIFFERENCES = 4

Short = Annotated[str, StringConstraints(max_length=40)]
Phrase = Annotated[str, StringConstraints(max_length=80)]
Sentence = Annotated[str, StringConstraints(max_length=200)]
PromptText = Annotated[str, StringConstraints(min_length=1, max_length=400)]

ObjectType = Literal["person", "animal", "object"]

#: Attribute fields asked for each object type (METHODS.md: common four + type-specific).
COMMON_ATTRIBUTES = ("color", "material", "position", "texture")
TYPE_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "person": (*COMMON_ATTRIBUTES, "posture", "expression", "clothing"),
    "animal": (*COMMON_ATTRIBUTES, "species", "posture"),
    "object": (*COMMON_ATTRIBUTES, "function", "state"),
}


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GlobalFeatures(_Closed):
    """Image-wide properties a regeneration must match.

    Examples:
        >>> GlobalFeatures(style="photo", lighting="soft daylight", color_palette="warm", composition="centered").style
        'photo'
    """

    style: Phrase
    lighting: Phrase
    color_palette: Phrase
    composition: Phrase


class CaptionStage(_Closed):
    """Stage 1: a one-sentence description and the global features.

    Examples:
        >>> features = dict(style="photo", lighting="daylight", color_palette="warm", composition="centered")
        >>> CaptionStage(description="A cat on a sofa.", global_features=features).global_features.lighting
        'daylight'
    """

    description: Sentence
    global_features: GlobalFeatures


class ObjectStub(_Closed):
    """An object found in stage 2, before its attributes are asked.

    Examples:
        >>> ObjectStub(name="cat", type="animal").type
        'animal'
    """

    name: Short
    type: ObjectType


class ObjectsStage(_Closed):
    """Stage 2: the main objects, most important first.

    Examples:
        >>> len(ObjectsStage(objects=[{"name": "cat", "type": "animal"}, {"name": "sofa", "type": "object"}]).objects)
        2
    """

    objects: list[ObjectStub] = Field(max_length=MAX_OBJECTS)


def _attribute_model(kind: str) -> type[BaseModel]:
    fields: dict[str, Any] = {name: (Phrase, ...) for name in TYPE_ATTRIBUTES[kind]}
    return create_model(f"{kind.capitalize()}Attributes", __base__=_Closed, **fields)


#: Stage 3 answer model per object type.
ATTRIBUTE_MODELS: dict[str, type[BaseModel]] = {kind: _attribute_model(kind) for kind in TYPE_ATTRIBUTES}


class Relationship(_Closed):
    """A directed relation between two named objects ("cat", "sits on", "sofa").

    Examples:
        >>> Relationship(subject="cat", relation="sits on", object="sofa").relation
        'sits on'
    """

    subject: Short
    relation: Short
    object: Short


class IUTObject(_Closed):
    """One object of the tree with the attributes its type calls for.

    Examples:
        >>> IUTObject(name="cat", type="animal", attributes={"color": "black"}).attributes
        {'color': 'black'}
    """

    name: Short
    type: ObjectType
    attributes: dict[str, Phrase] = Field(default_factory=dict)


class IUT(_Closed):
    """The Image Understanding Tree: description, global features, objects, relationships.

    Examples:
        Without a text judge, the tree itself becomes a prompt (uninformative values left out):

        >>> tree = IUT(description="A cat on a sofa.",
        ...            global_features={"style": "photo", "lighting": "daylight", "color_palette": "n/a",
        ...                             "composition": "centered"},
        ...            objects=[{"name": "cat", "type": "animal", "attributes": {"color": "black", "posture": "none"}}],
        ...            relationships=[{"subject": "cat", "relation": "sits on", "object": "sofa"}])
        >>> tree.to_prompt()
        'A cat on a sofa, cat: black, cat sits on sofa, photo, daylight, centered'
        >>> IUT.model_validate_json(tree.to_text()) == tree
        True
    """

    description: Sentence
    global_features: GlobalFeatures
    objects: list[IUTObject] = Field(default_factory=list, max_length=MAX_OBJECTS)
    relationships: list[Relationship] = Field(default_factory=list, max_length=MAX_RELATIONS)

    def to_text(self) -> str:
        """Compact JSON for prompts (no indentation: fewer tokens)."""
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))

    def to_prompt(self) -> str:
        """A deterministic text-to-image prompt from the tree, when no text judge writes one."""
        parts = [self.description.strip().rstrip(".")]
        for obj in self.objects:
            details = [v.strip() for k, v in obj.attributes.items() if _informative(v)]
            if details:
                parts.append(f"{obj.name}: {', '.join(details)}")
        for rel in self.relationships:
            parts.append(f"{rel.subject} {rel.relation} {rel.object}")
        g = self.global_features
        parts += [v.strip() for v in (g.style, g.lighting, g.color_palette, g.composition) if _informative(v)]
        return ", ".join(p for p in parts if p)


def _informative(value: str) -> bool:
    return bool(value.strip()) and value.strip().lower() not in {"none", "n/a", "unknown", "not visible", "-"}


def relationships_model(names: list[str]) -> dict:
    """Stage 4 JSON schema whose subject and object must be one of this image's object names.

    Examples:
        Subject and object are limited to the names found in this image:

        >>> schema = relationships_model(["cat", "sofa"])
        >>> schema["properties"]["relationships"]["items"]["properties"]["subject"]
        {'type': 'string', 'enum': ['cat', 'sofa']}
    """
    relation = {"type": "object", "additionalProperties": False, "required": ["subject", "relation", "object"],
                "properties": {"subject": {"type": "string", "enum": list(names)},
                               "relation": {"type": "string", "maxLength": 40},
                               "object": {"type": "string", "enum": list(names)}}}
    return {"type": "object", "additionalProperties": False, "required": ["relationships"],
            "properties": {"relationships": {"type": "array", "items": relation, "maxItems": MAX_RELATIONS}}}


class RelationsStage(_Closed):
    """Stage 4 answer, validated after decoding against the names (`check_names`).

    Examples:
        >>> stage = RelationsStage(relationships=[{"subject": "cat", "relation": "on", "object": "sofa"}])
        >>> stage.relationships[0].object
        'sofa'
    """

    relationships: list[Relationship] = Field(max_length=MAX_RELATIONS)


class PromptAnswer(_Closed):
    """One text-to-image prompt.

    Examples:
        >>> PromptAnswer(prompt="a black cat on a red sofa").prompt
        'a black cat on a red sofa'
    """

    prompt: PromptText


def prompt_list_schema(n: int) -> dict:
    """JSON schema for exactly `n` prompts (variants or revisions).

    Examples:
        >>> items = prompt_list_schema(3)["properties"]["prompts"]
        >>> items["minItems"], items["maxItems"]
        (3, 3)
    """
    if n < 1:
        raise ValueError(f"need at least one prompt, got n={n}")
    return {"type": "object", "additionalProperties": False, "required": ["prompts"],
            "properties": {"prompts": {"type": "array", "minItems": n, "maxItems": n,
                                       "items": {"type": "string", "minLength": 1, "maxLength": 400}}}}


class PromptList(_Closed):
    """Prompt variants or revisions.

    Examples:
        >>> PromptList(prompts=["a cat", "a black cat"]).prompts[1]
        'a black cat'
    """

    prompts: list[PromptText] = Field(min_length=1)


class Feedback(_Closed):
    """What differs between the reference and the best regeneration, and how to change the prompt.

    Examples:
        >>> Feedback(differences=["the sofa is blue"], instruction="Make the sofa red.").instruction
        'Make the sofa red.'
    """

    differences: list[Phrase] = Field(max_length=MAX_DIFFERENCES)
    instruction: Sentence


class Rating(_Closed):
    """A 1-5 judgement with a short reason given first (the reason conditions the score).

    Examples:
        >>> Rating(reason="Same objects, different light.", score=4).score
        4
        >>> from pydantic import ValidationError
        >>> try:
        ...     Rating(reason="x", score=6)
        ... except ValidationError as error:
        ...     print(error.errors()[0]["type"])
        literal_error
    """

    reason: Sentence
    score: Literal[1, 2, 3, 4, 5]


class Caption(_Closed):
    """A short caption (the CLIP-interrogator-style baseline's base text).

    Examples:
        >>> Caption(caption="a black cat on a sofa").caption
        'a black cat on a sofa'
    """

    caption: Phrase
