"""Tolerant reading of the judge's JSON answers, and token budgets that let constrained JSON close.

A backend without grammar support may wrap JSON in prose or code fences, and a small model
may put raw control characters inside strings; both are read. Anything that still does
not validate is a `ParseFailure`: counted and reported by the caller, never a score.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from vlmjudge.requests import Answer

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


@dataclass(frozen=True)
class ParseFailure:
    """Why an answer could not be read (kept in run records and counted)."""

    stage: str
    reason: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"stage": self.stage, "reason": self.reason, "text": self.text[:500]}


def extract_json(text: str) -> Any:
    """The first JSON object in `text` (code fences and surrounding prose allowed; strict=False
    accepts raw control characters in strings). Raises ValueError when there is none."""
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped, strict=False)
    except json.JSONDecodeError:
        start = stripped.find("{")  # not JSON as a whole: the first object inside the prose
    if start < 0:
        raise ValueError("no JSON object in the answer")
    decoder = json.JSONDecoder(strict=False)
    try:
        value, _ = decoder.raw_decode(stripped[start:])
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at {exc.pos}") from exc
    return value


def parse_answer(answer: Answer, model: type[M], stage: str) -> M | ParseFailure:
    """Validate an answer against `model`; a failed response, a cut-off or bad JSON is a ParseFailure."""
    if not answer.ok:
        return ParseFailure(stage, "the judge returned no answer (backend error)", answer.text)
    try:
        data = extract_json(answer.text)
    except ValueError as exc:
        reason = str(exc) + (" (the token budget ran out)" if answer.finish_reason == "length" else "")
        return ParseFailure(stage, reason, answer.text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return ParseFailure(stage, f"schema mismatch at {where or 'top level'}: {first.get('msg')}", answer.text)


def token_budget(schema: dict, *, floor: int = 32, cap: int = 4096) -> int:
    """A max_new_tokens under which any schema-valid answer fits, even one token per character.

    Strings count twice their maxLength (escapes), plus keys and punctuation; unbounded
    strings or arrays fall back to `cap`.
    """
    defs = schema.get("$defs", {})

    def size(node: dict) -> int:
        if "$ref" in node:
            return size(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "enum" in node:
            return max(len(json.dumps(v)) for v in node["enum"]) + 2
        if "anyOf" in node:
            return max(size(n) for n in node["anyOf"])
        kind = node.get("type")
        if kind == "string":
            return 2 * node["maxLength"] + 4 if "maxLength" in node else cap
        if kind in ("integer", "number"):
            return 12
        if kind == "boolean" or kind == "null":
            return 6
        if kind == "array":
            if "maxItems" not in node:
                return cap
            return node["maxItems"] * (size(node.get("items", {})) + 2) + 4
        if kind == "object":
            props = node.get("properties", {})
            if not props and node.get("additionalProperties", True) is not False:
                return cap
            return sum(size(v) + len(k) + 6 for k, v in props.items()) + 4
        return cap

    return max(floor, min(cap, size(schema)))
