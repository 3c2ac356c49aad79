"""Tolerant readers for what a judge writes: the leading option word and a JSON object.

A backend that enforces the constraint gives clean text; one that cannot (a plain server,
a replayed run) may add spaces, quotes, markdown or case changes, which these accept. What
they cannot read comes back as None, and the caller counts it as a parse failure.
"""
from __future__ import annotations

import json
import re
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

_LEAD = re.compile(r"^[\s\"'`*_>#:\-\[\(]*")


def leading_option(text: str, options: Sequence[str]) -> str | None:
    """The option the text starts with (ignoring leading spaces, quotes and markdown, and
    case), longest option first; None when it starts with none of them."""
    body = _LEAD.sub("", text or "")
    lowered = body.lower()
    for option in sorted(options, key=len, reverse=True):
        if lowered.startswith(option.lower()):
            rest = body[len(option):]
            if option[-1].isalnum() and rest[:1].isalnum():
                continue  # "Yesterday" is not "Yes"
            return option
    return None


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in the text (control characters inside strings allowed)."""
    decoder = json.JSONDecoder(strict=False)
    start = text.find("{") if text else -1
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


class Evidence(BaseModel):
    """What a positive detection adds: the affected aspect and one sentence of evidence."""

    model_config = ConfigDict(extra="ignore")
    aspect: str = Field(min_length=1)
    evidence: str = Field(min_length=1)


class Reason(BaseModel):
    """A short stated reason (why an image is N/A, why a violation is major or minor)."""

    model_config = ConfigDict(extra="ignore")
    reason: str = Field(min_length=1)


def evidence_schema(max_aspect: int, max_evidence: int) -> dict[str, Any]:
    """The JSON schema a backend enforces for evidence: both strings bounded so output closes."""
    return {"type": "object", "additionalProperties": False, "required": ["aspect", "evidence"],
            "properties": {"aspect": {"type": "string", "minLength": 1, "maxLength": max_aspect},
                           "evidence": {"type": "string", "minLength": 1, "maxLength": max_evidence}}}


def reason_schema(max_reason: int) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["reason"],
            "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": max_reason}}}


def parse_evidence(text: str) -> Evidence | None:
    """Evidence from the text's first JSON object, or None when it is missing or incomplete."""
    return _parse_model(text, Evidence)


def parse_reason(text: str) -> Reason | None:
    return _parse_model(text, Reason)


def _parse_model(text: str, model: type[BaseModel]) -> Any:
    obj = first_json_object(text)
    if obj is None:
        return None
    obj = {k: v.strip() if isinstance(v, str) else v for k, v in obj.items()}
    try:
        return model.model_validate(obj)
    except ValidationError:
        return None
