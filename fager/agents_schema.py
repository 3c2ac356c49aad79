"""Decoding schemas for the agents: the pydantic schemas of `fager.schema`, narrowed for a decoder.

A constrained decoder can only promise valid JSON if every string and list is bounded
tightly enough to close within the token budget, and if the grammar itself rules out
what the pydantic model would reject afterwards. So each agent's schema is the model's
own JSON schema with references inlined, bounds lowered to the pack's limits and the
add/drop reasons split by direction. QA generation asks for the questions only, one per
fact in a list of pinned length; the QA items are then assembled from the rubric and
validated as `fager.schema.QAItems`.
"""
from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from vlmjudge.grammar import schema_nodes

from .pack import Limits
from .schema import ADD_REASONS, DROP_REASONS, MAX_QUESTION


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


__all__ = ["inline_refs", "model_schema", "narrow", "qa_schema", "verification_schema"]
