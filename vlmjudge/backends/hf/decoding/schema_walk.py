"""JSON-schema questions `closing` asks: references, alternatives, literals, bounds, and
the byte-level endings tried on a matcher fork."""
from __future__ import annotations

import json
from typing import Any


class Unsupported(Exception):
    """The schema or the text uses something `JsonWalker` does not model."""


_DIGITS = [str(d).encode() for d in range(10)]


def inline(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """The schema with its local references replaced by their definitions, so that every
    sub-schema is one object for the life of a walker (memos are keyed by identity)."""
    root = schema if root is None else root
    if depth > 32:
        raise Unsupported("recursive references")
    if isinstance(schema, dict):
        if "$ref" in schema:
            target = deref(root, {"$ref": schema["$ref"]})
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            return inline(merged, root, depth + 1)
        return {k: inline(v, root, depth) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [inline(v, root, depth) for v in schema]
    return schema


def deref(root: dict, schema: Any) -> Any:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise Unsupported(f"reference {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
        if seen > 64:
            raise Unsupported("recursive references")
    if schema is True or schema == {}:
        return {}
    if not isinstance(schema, dict):
        raise Unsupported(f"schema {schema!r}")
    return schema


def schema_type(schema: dict) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        raise Unsupported("type lists")  # handled as alternatives before this is asked
    return kind


def alternatives(schema: dict) -> list | None:
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return list(schema[key])
    if isinstance(schema.get("type"), list):
        return [{**schema, "type": t} for t in schema["type"]]
    return None


def literals(schema: dict) -> list[bytes] | None:
    if "const" in schema:
        return [json.dumps(schema["const"], ensure_ascii=False).encode()]
    if "enum" in schema:
        return [json.dumps(v, ensure_ascii=False).encode() for v in schema["enum"]]
    return None


_STARTS = {"string": '"', "object": "{", "array": "[", "boolean": "tf", "null": "n",
           "integer": "-0123456789", "number": "-0123456789"}


def _starts(root: dict, schema: Any) -> str:
    """The bytes a value of this schema can start with."""
    schema = deref(root, schema)
    texts = literals(schema)
    if texts is not None:
        return "".join({chr(t[0]) for t in texts})
    branches = alternatives(schema)
    if branches is not None:
        return "".join(_starts(root, s) for s in branches)
    kind = schema_type(schema)
    return _STARTS.get(kind, "") if kind else '"{[tfn-0123456789'


def branch(root: dict, schema: Any, c: str) -> dict:
    """The one alternative of `schema` a value starting with `c` belongs to."""
    schema = deref(root, schema)
    branches = alternatives(schema)
    if branches is None:
        return schema
    matching = [s for s in branches if c in _starts(root, s)]
    if len(matching) != 1:
        raise Unsupported(f"{len(matching)} schema branches start with {c!r}")
    return branch(root, matching[0], c)


def properties(schema: dict) -> list[tuple[str, Any]]:
    return list((schema.get("properties") or {}).items())


def next_keys(obj: Any) -> list[int]:
    """Properties that may come next: after the last one written, up to the first required."""
    props = properties(obj.schema)
    required = set(obj.schema.get("required", ()))
    out = []
    for j in range(obj.index + 1, len(props)):
        out.append(j)
        if props[j][0] in required:
            break
    if not out:
        raise Unsupported("an object with no property left to write")
    return out


def item_schema(schema: dict, j: int) -> Any:
    prefix = schema.get("prefixItems") or []
    if j < len(prefix):
        return prefix[j]
    items = schema.get("items", {})
    if items is False:
        raise Unsupported("an item past prefixItems")
    return items


def min_items(schema: dict) -> int:
    return max(int(schema.get("minItems", 0)), len(schema.get("prefixItems") or []))


def least_number(schema: dict, kind: str) -> str:
    """The shortest number text in the schema's range: 0, else the bound nearest to it."""
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if "exclusiveMinimum" in schema or "exclusiveMaximum" in schema:
        raise Unsupported("exclusive number bounds")
    if low is not None and low > 0:
        value = low
    elif high is not None and high < 0:
        value = high
    else:
        return "0"
    if kind == "integer" or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def continuation(fork: Any, pending: int) -> bytes:
    """Continuation bytes that finish a character cut after its lead byte (tried on `fork`)."""
    out = b""
    for _ in range(pending):
        for b in range(0x80, 0xC0):
            if fork.accept_string(bytes([b])):
                out += bytes([b])
                break
        else:
            raise Unsupported("no continuation byte the grammar accepts")
    return out


def number_end(fork: Any, follow: bytes) -> bytes:
    """The fewest digits that make the number so far valid before `follow` (the byte after
    it; b"" at the root, where the document must then be complete)."""
    frontier = [b""]
    for _ in range(4):
        for ending in frontier:
            probe = fork.fork()
            if probe.accept_string(ending + follow) if (ending + follow) else True:
                if follow or probe.is_completed():
                    return ending
        frontier = [e + d for e in frontier for d in _DIGITS]
    raise Unsupported("no short number ending")
