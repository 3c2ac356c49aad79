"""The shortest way to finish a JSON document from where decoding stands, schema-aware.

xgrammar's matcher says whether a text is complete, not how far the nearest end is, and
constrained decoding must know that distance to stop in time (`forcing`). `JsonWalker` follows
the bytes a JSON-schema grammar lets through (one-line JSON, ", " and ": " separators,
properties in schema order, as `vlmjudge.grammar` compiles them) on a stack of frames, and
`closing` writes the minimal ending from that stack: the open string closed (after
`minLength`), a number or literal finished, each open container given its missing required
properties or `minItems` items as their shortest values, then closed. Byte choices that depend
on the grammar are tried on a fork of the matcher, and the caller checks the whole text on
another fork; a schema outside the handled subset (patterns, formats, free
`additionalProperties`, ambiguous `anyOf`) gives None, and the caller searches by grammar alone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .schema_walk import (Unsupported, alternatives, branch, continuation, deref, inline, item_schema,
                              least_number, literals, min_items, next_keys, number_end, properties, schema_type)

#: A piece of closing text, its token count (see `JsonWalker.count`) and the texts it joins,
#: which are tokenised one by one so that the count is exactly the tokens written.
Piece = tuple[bytes, int, tuple[bytes, ...]]
_NUMBER_BYTES = frozenset(b"0123456789.-+eE")


@dataclass
class Frame:
    """One open JSON value: its kind, schema and how far it has been written."""

    kind: str                       # value | string | number | literal | object | array
    schema: Any = None
    state: str = ""                 # object / array sub-state (see `_feed_object`, `_feed_array`)
    text: bytes = b""               # literal or number so far; a key string's bytes
    count: int = 0                  # string characters, array items
    index: int = -1                 # object: the last property written (or being written)
    escape: bool = False
    pending: int = 0                # continuation bytes still owed by a multi-byte character
    is_key: bool = False
    options: tuple = field(default=())  # literal: the JSON texts it may still become


class JsonWalker:
    """Tracks a schema-constrained JSON document byte by byte and writes its shortest ending.

    `count(piece)` gives the number of tokens a piece of text costs (the caller's tokenizer),
    used to pick the cheapest of several endings and reported with each closing.
    """

    def __init__(self, schema: dict[str, Any], count: Callable[[bytes], int]) -> None:
        self.root = inline(schema)
        self.count = count
        self._minimal: dict[int, Piece] = {}
        self._tails: dict[tuple, Piece] = {}
        self._keep: list = []  # the schemas `_tails` is keyed by, kept alive (ids stay unique)

    # -- the stack -------------------------------------------------------------------------
    def start(self) -> list[Frame]:
        return [Frame("value", self.root)]

    @staticmethod
    def copy(stack: list[Frame]) -> list[Frame]:
        return [replace(f) for f in stack]

    def feed(self, stack: list[Frame], data: bytes) -> None:
        """Advance `stack` (in place) over bytes the grammar accepted; raises Unsupported."""
        for b in data:
            self._feed_byte(stack, b)

    def _feed_byte(self, stack: list[Frame], b: int) -> None:
        if not stack:
            raise Unsupported("bytes after the end of the document")
        top = stack[-1]
        kind = top.kind
        if kind == "value":
            stack[-1] = self._open_value(top.schema, b)
            if stack[-1].kind == "literal":
                self._literal_maybe_done(stack)
            return
        if kind == "string":
            self._feed_string(stack, top, b)
        elif kind == "number":
            if b in _NUMBER_BYTES:
                top.text += bytes([b])
            else:
                self._done(stack)
                self._feed_byte(stack, b)
        elif kind == "literal":
            extended = top.text + bytes([b])
            options = tuple(o for o in top.options if o.startswith(extended))
            if not options:
                if top.text not in top.options:
                    raise Unsupported("literal outside its options")
                self._done(stack)
                self._feed_byte(stack, b)
                return
            top.text, top.options = extended, options
            self._literal_maybe_done(stack)
        elif kind == "object":
            self._feed_object(stack, top, b)
        elif kind == "array":
            self._feed_array(stack, top, b)

    def _literal_maybe_done(self, stack: list[Frame]) -> None:
        top = stack[-1]
        if top.text in top.options and len(top.options) == 1:
            self._done(stack)

    def _feed_string(self, stack: list[Frame], top: Frame, b: int) -> None:
        if top.is_key:
            top.text += bytes([b])
        if top.pending:
            top.pending -= 1
        elif top.escape:
            if b == ord("u"):
                raise Unsupported("\\u escapes")
            top.escape, top.count = False, top.count + 1
        elif b == ord("\\"):
            top.escape = True
        elif b == ord('"'):
            self._done(stack)
        else:
            top.count += 1
            top.pending = 3 if b >= 0xF0 else 2 if b >= 0xE0 else 1 if b >= 0xC0 else 0

    def _feed_object(self, stack: list[Frame], top: Frame, b: int) -> None:
        c = chr(b)
        state = top.state
        if state in ("open", "after_value") and c == "}":
            self._done(stack)
        elif state in ("open", "comma_sp") and c == '"':
            top.state = "key"
            stack.append(Frame("string", is_key=True, text=b'"'))
        elif state == "after_key" and c == ":":
            top.state = "colon"
        elif state == "colon" and c == " ":
            top.state = "value"
            stack.append(Frame("value", properties(top.schema)[top.index][1]))
        elif not _separator(top, c):
            raise Unsupported(f"byte {c!r} in object state {state!r}")

    def _feed_array(self, stack: list[Frame], top: Frame, b: int) -> None:
        c = chr(b)
        state = top.state
        if state in ("open", "after_value") and c == "]":
            self._done(stack)
        elif state in ("open", "comma_sp"):
            top.state = "value"
            stack.append(Frame("value", item_schema(top.schema, top.count)))
            self._feed_byte(stack, b)
        elif not _separator(top, c):
            raise Unsupported(f"byte {c!r} in array state {state!r}")

    def _done(self, stack: list[Frame]) -> None:
        """The top value is complete: pop it and move its parent on."""
        child = stack.pop()
        if not stack:
            return
        parent = stack[-1]
        if parent.kind == "object" and parent.state == "key":
            name = json.loads(child.text.decode())
            names = [n for n, _ in properties(parent.schema)]
            if name not in names:
                raise Unsupported(f"key {name!r} not in the schema")
            parent.index, parent.state = names.index(name), "after_key"
        elif parent.kind in ("object", "array") and parent.state == "value":
            parent.state = "after_value"
            if parent.kind == "array":
                parent.count += 1

    def _open_value(self, schema: Any, b: int) -> Frame:
        """The frame a value's first byte opens, the schema branch chosen by that byte."""
        c = chr(b)
        chosen = branch(self.root, schema, c)
        texts = literals(chosen)
        if texts is not None:
            options = tuple(t for t in texts if t.startswith(bytes([b])))
            if not options:
                raise Unsupported("value outside its enum")
            return Frame("literal", chosen, text=bytes([b]), options=options)
        if c == '"':
            return Frame("string", chosen)
        if c == "{":
            return Frame("object", chosen, state="open")
        if c == "[":
            return Frame("array", chosen, state="open")
        if c == "-" or c.isdigit():
            return Frame("number", chosen, text=bytes([b]))
        options = tuple(t for t in (b"true", b"false", b"null") if t[0] == b)
        if not options:
            raise Unsupported(f"a value cannot start with {c!r}")
        return Frame("literal", chosen, text=bytes([b]), options=options)

    # -- the shortest ending ---------------------------------------------------------------
    def closing(self, stack: list[Frame], fork: Any) -> list[Piece]:
        """Pieces of the shortest text that completes the document from `stack`; `fork` is a
        matcher in the same state, used (and moved) to settle byte-level choices."""
        tails: list[Piece] = []  # what each parent needs once its child is done, innermost first
        for parent in reversed(stack[:-1]):
            if parent.kind == "object" and parent.state == "key":
                continue  # the key's completion is chosen with the whole property (below)
            tails.append(self._after_child(parent))
        top = stack[-1] if stack else None
        if top is None:
            return []
        if top.is_key:
            head = self._finish_key(stack[-2], top)
        else:
            follow = tails[0][0][:1] if tails else b""
            head = [self._finish(top, fork, follow)]
        return [p for p in head + tails if p[0]]

    def _after_child(self, parent: Frame) -> Piece:
        if parent.kind == "object":
            return self._object_tail(parent.schema, parent.index)
        return self._array_tail(parent.schema, parent.count + 1)

    def _finish(self, top: Frame, fork: Any, follow: bytes) -> Piece:
        kind = top.kind
        if kind == "value":
            return self.minimal(top.schema)
        if kind == "string":
            text = continuation(fork, top.pending) + (b"n" if top.escape else b"")
            need = max(0, int(top.schema.get("minLength", 0)) - top.count - (1 if top.escape else 0))
            return self._piece(text + b"a" * need + b'"')
        if kind == "literal":
            return self._piece(min((o for o in top.options), key=len)[len(top.text):])
        if kind == "number":
            return self._piece(number_end(fork, follow))
        if kind == "object":
            return self._object_open_part(top)
        return self._array_open_part(top)

    def _object_open_part(self, top: Frame) -> Piece:
        props = properties(top.schema)
        state = top.state
        if state == "open":
            return self._object_tail(top.schema, -1, first=True)
        if state in ("colon", "after_key"):
            lead = b": " if state == "after_key" else b" "
            value = self.minimal(props[top.index][1])
            return self._join([self._piece(lead), value, self._object_tail(top.schema, top.index)])
        if state == "after_value":
            return self._object_tail(top.schema, top.index)
        lead = b" " if state == "comma" else b""
        return min((self._join([self._piece(lead), self._property(props, j),
                                self._object_tail(top.schema, j)]) for j in next_keys(top)),
                   key=lambda p: p[1])

    def _finish_key(self, obj: Frame, key: Frame) -> list[Piece]:
        """The rest of a key being written, chosen with its value and the object's tail."""
        props = properties(obj.schema)
        best = None
        for j in next_keys(obj):
            name = json.dumps(props[j][0], ensure_ascii=False).encode()
            if name.startswith(key.text):
                piece = self._join([self._piece(name[len(key.text):] + b": "), self.minimal(props[j][1]),
                                    self._object_tail(obj.schema, j)])
                best = piece if best is None or piece[1] < best[1] else best
        if best is None:
            raise Unsupported("a key no property completes")
        return [best]

    def _array_open_part(self, top: Frame) -> Piece:
        state = top.state
        if state in ("open", "after_value"):
            return self._array_tail(top.schema, top.count, first=state == "open")
        lead = b" " if state == "comma" else b""
        return self._join([self._piece(lead), self.minimal(item_schema(top.schema, top.count)),
                           self._array_tail(top.schema, top.count + 1)])

    def _object_tail(self, schema: dict, index: int, first: bool = False) -> Piece:
        """After property `index` (-1: none yet): the required properties left, then "}"."""
        key = (id(schema), index, first)
        if key not in self._tails:
            self._keep.append(schema)
            props = properties(schema)
            required = set(schema.get("required", ()))
            parts, lead = [], not first
            for j in range(index + 1, len(props)):
                if props[j][0] in required:
                    parts += [self._piece(b", " if lead else b""), self._property(props, j)]
                    lead = True
            self._tails[key] = self._join(parts + [self._piece(b"}")])
        return self._tails[key]

    def _array_tail(self, schema: dict, count: int, first: bool = False) -> Piece:
        """After `count` items: the items still needed to reach the minimum, then "]"."""
        key = (id(schema), count, first)
        if key not in self._tails:
            self._keep.append(schema)
            parts = []
            for j in range(count, min_items(schema)):
                parts += [self._piece(b"" if first and j == count else b", "),
                          self.minimal(item_schema(schema, j))]
            self._tails[key] = self._join(parts + [self._piece(b"]")])
        return self._tails[key]

    def _property(self, props: list, j: int) -> Piece:
        name = json.dumps(props[j][0], ensure_ascii=False).encode()
        return self._join([self._piece(name + b": "), self.minimal(props[j][1])])

    def minimal(self, schema: Any) -> Piece:
        """The shortest valid value of a sub-schema (memoised)."""
        key = id(schema)  # the entry keeps `schema` alive, so its id is never reused
        if key not in self._minimal:
            self._minimal[key] = (schema, self._compute_minimal(schema))
        return self._minimal[key][1]

    def _compute_minimal(self, schema: Any) -> Piece:
        schema = deref(self.root, schema)
        texts = literals(schema)
        if texts is not None:
            return min((self._piece(t) for t in texts), key=lambda p: (p[1], len(p[0])))
        options = alternatives(schema)
        if options is not None:
            return min((self.minimal(s) for s in options), key=lambda p: p[1])
        kind = schema_type(schema)
        if kind == "string":
            if {"pattern", "format"} & schema.keys():
                raise Unsupported("string patterns and formats")
            return self._piece(b'"' + b"a" * int(schema.get("minLength", 0)) + b'"')
        if kind in ("integer", "number"):
            return self._piece(least_number(schema, kind).encode())
        if kind == "boolean":
            return self._piece(b"true")
        if kind == "null" or kind is None:
            return self._piece(b"null")
        if kind == "array":
            return self._join([self._piece(b"["), self._array_tail(schema, 0, first=True)])
        if kind == "object":
            extra = schema.get("additionalProperties", False)
            if extra not in (False, None) and schema.get("properties") is None:
                raise Unsupported("objects with free keys")
            return self._join([self._piece(b"{"), self._object_tail(schema, -1, first=True)])
        raise Unsupported(f"schema type {kind!r}")

    def _piece(self, text: bytes) -> Piece:
        return (text, self.count(text), (text,)) if text else (b"", 0, ())

    @staticmethod
    def _join(pieces: list[Piece]) -> Piece:
        return (b"".join(p[0] for p in pieces), sum(p[1] for p in pieces),
                tuple(leaf for p in pieces for leaf in p[2]))


def _separator(top: Frame, c: str) -> bool:
    """Step an object or array over the `, ` between members; False if `c` is not that step."""
    if top.state == "after_value" and c == ",":
        top.state = "comma"
    elif top.state == "comma" and c == " ":
        top.state = "comma_sp"
    else:
        return False
    return True
