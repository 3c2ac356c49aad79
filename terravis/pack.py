"""Prompt packs: the versioned templates and option words TerraVis asks a judge with.

A pack is JSON shipped in `terravis/packs/` (the default is `default-v1`). A user pack (a
path or a dict) is laid over the default, so a dict with only `examples` (in-context
examples per type) or `questions` is enough; its version then records the change. The
rules shared by all questions of an image sit in the system prompt and the detection
instructions, placed before the short per-question suffix, so a backend can reuse that
prefix across the 18 questions.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vlmjudge.packs import PackModel, resolve_pack

from .taxonomy import TAXONOMY, TYPE_IDS, ViolationType, get_type

DEFAULT_PACK = "default-v1"
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class Example(BaseModel):
    """An in-context example for one check: a described situation and the right answer.

    Examples:
        A pack is written by hand, so it is read strictly: a misspelt key is an error, never a
        field left out in silence.

        >>> Example(description="A glass floats above a table with nothing under it.", answer="Yes").answer
        'Yes'
        >>> from pydantic import ValidationError
        >>> try:
        ...     Example(description="A glass floats.", answr="Yes")
        ... except ValidationError as error:
        ...     print(sorted(problem["type"] for problem in error.errors()))
        ['extra_forbidden', 'missing']
    """

    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class Options(BaseModel):
    """Single-token answer words per stage; the first word of a binary stage is the positive
    one (eligible, violation present, major); the holistic list ends with the N/A word.

    Examples:
        >>> options = load_pack().options
        >>> options.detection[0], len(options.holistic)
        ('Yes', 6)
    """

    model_config = ConfigDict(extra="forbid")
    eligibility: tuple[str, str]
    detection: tuple[str, str]
    severity: tuple[str, str]
    holistic: tuple[str, str, str, str, str, str]
    gptscore: tuple[str, str, str, str, str]

    @model_validator(mode="after")
    def _distinct(self) -> "Options":
        for stage in ("eligibility", "detection", "severity", "holistic", "gptscore"):
            words = getattr(self, stage)
            if len(set(words)) != len(words) or any(not w.strip() for w in words):
                raise ValueError(f"options for {stage} must be distinct non-blank words, got {list(words)}")
        return self


class PromptPack(PackModel):
    """Every text TerraVis sends to a judge, with the limits on what comes back.

    Examples:
        A dict laid over the default is versioned by a digest of what it changes:

        >>> from terravis.taxonomy import get_type
        >>> pack = load_pack({"questions": {"contact_state": "Do any two things pass through each other?"}})
        >>> pack.version.startswith(DEFAULT_PACK + "+"), pack.question_for(get_type("contact_state"))
        (True, 'Do any two things pass through each other?')
        >>> pack.sha256 == load_pack().sha256
        False
    """

    answer_prefix: str
    options: Options
    system: str
    eligibility: str
    detection: str
    question: str
    example: str
    severity: str
    severity_sees_image: bool = False
    holistic: str
    holistic_type_line: str
    gptscore: str
    limits: dict[str, int]
    max_new_tokens: dict[str, int]
    questions: dict[str, str] = Field(default_factory=dict)
    examples: dict[str, list[Example]] = Field(default_factory=dict)

    @field_validator("questions", "examples")
    @classmethod
    def _known_types(cls, value: dict) -> dict:
        unknown = sorted(set(value) - set(TYPE_IDS))
        if unknown:
            raise ValueError(f"unknown violation type ids {unknown}; valid ids: {list(TYPE_IDS)}")
        return value

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, int]) -> dict[str, int]:
        return _positive_ints(value, ("reason", "aspect", "evidence"), "limits")

    @field_validator("max_new_tokens")
    @classmethod
    def _budgets(cls, value: dict[str, int]) -> dict[str, int]:
        return _positive_ints(value, ("reason", "evidence"), "max_new_tokens")

    @model_validator(mode="after")
    def _placeholders(self) -> "PromptPack":
        needed = {"question": ("{question}", "{examples}"), "example": ("{description}", "{answer}"),
                  "severity": ("{aspect}", "{evidence}"), "holistic": ("{taxonomy}",)}
        for name, marks in needed.items():
            missing = [m for m in marks if m not in getattr(self, name)]
            if missing:
                raise ValueError(f"pack template {name!r} lacks placeholders {missing}")
        return self

    # -- derived texts -----------------------------------------------------------------
    def question_for(self, vtype: ViolationType) -> str:
        """The visual question for one type: the pack's override or the taxonomy default."""
        return self.questions.get(vtype.id, vtype.question)

    def detection_text(self, vtype: ViolationType) -> str:
        """The user text of one detection request: shared instructions, then the short suffix."""
        examples = "".join(fill(self.example, description=e.description, answer=e.answer) + "\n"
                           for e in self.examples.get(vtype.id, []))
        suffix = fill(self.question, examples=examples, question=self.question_for(vtype))
        return f"{self.detection}\n\n{suffix}"

    def severity_text(self, type_id: str, aspect: str | None, evidence: str | None) -> str:
        vtype = get_type(type_id)
        return fill(self.severity, type_name=vtype.name, checks=vtype.checks, question=self.question_for(vtype),
                                    aspect=aspect or "not stated", evidence=evidence or "not stated")

    def holistic_text(self) -> str:
        lines = "\n".join(fill(self.holistic_type_line, name=t.name, level=t.level, checks=t.checks)
                          for t in TAXONOMY)
        return fill(self.holistic, taxonomy=lines)


def fill(template: str, **values: str) -> str:
    """Put values into `{name}` placeholders, leaving every other brace alone (templates show
    JSON examples, which str.format would choke on).

    Examples:
        Only `{name}` placeholders are filled; JSON braces stay:

        >>> fill('Is {thing} red? Answer {"answer": "Yes"}.', thing="the cup")
        'Is the cup red? Answer {"answer": "Yes"}.'
    """
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _positive_ints(value: dict[str, int], keys: tuple[str, ...], what: str) -> dict[str, int]:
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{what} lacks {missing}")
    bad = {k: v for k, v in value.items() if not isinstance(v, int) or v < 1}
    if bad:
        raise ValueError(f"{what} must be positive integers, got {bad}")
    return value


def _overlay(base: dict[str, Any], pack: Mapping[str, Any]) -> dict[str, Any]:
    """A user's dict over the default; partial options, limits and budgets keep the other defaults."""
    merged = {**base, **dict(pack)}
    for key in ("options", "limits", "max_new_tokens"):
        if isinstance(pack.get(key), Mapping):
            merged[key] = {**base[key], **dict(pack[key])}
    return merged


def load_pack(pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None) -> PromptPack:
    """The pack to ask with: None for the default, a shipped pack name, a JSON path, a dict
    laid over the default, or a PromptPack as is.

    Examples:
        >>> load_pack().version, load_pack(DEFAULT_PACK) == load_pack()
        ('default-v1', True)
    """
    return resolve_pack(pack, PromptPack, package="terravis", default=DEFAULT_PACK, label="TerraVis",
                        merge=_overlay)
