"""What a TerraVis judge is asked to write: the JSON after a decision, and the grammars of whole answers.

A decision is one option word; after some options a stage continues with one JSON object
(evidence after a detection, a reason after eligibility and severity). Every string in it is
bounded, so constrained output closes within the stage's token budget; the pydantic models read
the object back (`terravis.parsing`), and the EBNF grammars join the option word and the object
for decoders that take one grammar for the whole answer.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field

from vlmjudge.requests import Constraint

from .pack import PromptPack

#: The rule the continuation's JSON grammar is embedded under in a whole-answer grammar.
_TEXT_RULE = "tv_text"
_ROOT_RULE = re.compile(r"^root ::=", re.M)


class Evidence(BaseModel):
    """What a positive detection adds: the affected aspect and one sentence of evidence.

    Examples:
        A judge's answer is read leniently: keys it adds of its own are dropped, the two kept.

        >>> Evidence.model_validate({"aspect": "hand", "evidence": "The left hand has six fingers.",
        ...                          "confidence": "high"})
        Evidence(aspect='hand', evidence='The left hand has six fingers.')
    """

    model_config = ConfigDict(extra="ignore")
    aspect: str = Field(min_length=1)
    evidence: str = Field(min_length=1)


class Reason(BaseModel):
    """A short stated reason (why an image is N/A, why a violation is major or minor).

    Examples:
        >>> Reason(reason="A bar chart.").reason
        'A bar chart.'
    """

    model_config = ConfigDict(extra="ignore")
    reason: str = Field(min_length=1)


def evidence_schema(max_aspect: int, max_evidence: int) -> dict[str, Any]:
    """The JSON schema a backend enforces for evidence: both strings bounded so output closes.

    Examples:
        >>> schema = evidence_schema(max_aspect=40, max_evidence=200)
        >>> schema["required"], schema["properties"]["evidence"]["maxLength"]
        (['aspect', 'evidence'], 200)
    """
    return {"type": "object", "additionalProperties": False, "required": ["aspect", "evidence"],
            "properties": {"aspect": {"type": "string", "minLength": 1, "maxLength": max_aspect},
                           "evidence": {"type": "string", "minLength": 1, "maxLength": max_evidence}}}


def reason_schema(max_reason: int) -> dict[str, Any]:
    """The JSON schema a backend enforces for a stated reason, its length bounded so output closes.

    Examples:
        >>> reason_schema(120)["properties"]["reason"]
        {'type': 'string', 'minLength': 1, 'maxLength': 120}
    """
    return {"type": "object", "additionalProperties": False, "required": ["reason"],
            "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": max_reason}}}


def continuation_schema(pack: PromptPack, stage: str) -> dict[str, Any]:
    """The JSON object that follows the option word: evidence after a detection, a reason
    after eligibility and severity (and none for ratings)."""
    lim = pack.limits
    if stage == "detection":
        return evidence_schema(lim["aspect"], lim["evidence"])
    if stage in ("eligibility", "severity"):
        return reason_schema(lim["reason"])
    raise ValueError(f"stage {stage!r} has no continuation")


def options_grammar(options: Sequence[str]) -> str:
    """EBNF for exactly one of the option words."""
    return "root ::= " + " | ".join(_literal(o) for o in options)


def answer_grammar(pack: PromptPack, stage: str, options: Sequence[str], text_after: Sequence[str]) -> str:
    """EBNF of a stage's whole answer: one option word, then the stage's JSON object after
    the options in `text_after` (e.g. evidence after Yes, nothing after No). The JSON part is
    the same grammar a JSON-schema constraint on the continuation compiles to."""
    unknown = set(text_after) - set(options)
    if unknown:
        raise ValueError(f"text_after {sorted(unknown)} are not among the options {list(options)}")
    if not text_after:
        return options_grammar(options)
    from vlmjudge.grammar import json_schema_to_ebnf

    body, n = _ROOT_RULE.subn(f"{_TEXT_RULE} ::=", json_schema_to_ebnf(continuation_schema(pack, stage)))
    if n != 1:
        raise RuntimeError("the JSON grammar has no single root rule to embed")
    alternatives = " | ".join(_literal(o) + (f" {_TEXT_RULE}" if o in text_after else "") for o in options)
    return f"root ::= {alternatives}\n{body}"


def decision_constraint(options: Sequence[str]) -> Constraint:
    """For mode "generate": one option word, the first answer token restricted to the options."""
    return Constraint.ebnf(options_grammar(options), first_options=options)


def full_answer_constraint(pack: PromptPack, stage: str, options: Sequence[str],
                           text_after: Sequence[str]) -> Constraint:
    """The whole answer of a stage in one constraint, first token restricted to the options."""
    return Constraint.ebnf(answer_grammar(pack, stage, options, text_after), first_options=options)


def _literal(word: str) -> str:
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
