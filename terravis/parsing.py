"""Tolerant readers for what a judge writes: the leading option word and a JSON object.

A backend that enforces the constraint gives clean text; one that cannot (a plain server,
a replayed run) may add spaces, quotes, markdown or case changes, which these accept. What
they cannot read comes back as None, and the caller counts it as a parse failure; no string
makes them raise, and they run in time linear in the text. Labelled free-text answers
(`Answer: Yes`) are read by `terravis.answers`, as the public release reads them.
"""
from __future__ import annotations

import math
import re
from json.decoder import scanstring
from typing import Any, Sequence

from pydantic import BaseModel, ValidationError

from .schema import Evidence, Reason

_LEAD = re.compile(r"^[\s\"'`*_>#:\-\[\(]*")


def leading_option(text: str, options: Sequence[str]) -> str | None:
    """The option the text starts with (ignoring leading spaces, quotes and markdown, and
    case), longest option first; None when it starts with none of them.

    Examples:
        >>> leading_option("**Yes**, the cup floats.", ["Yes", "No"])
        'Yes'
        >>> leading_option("  no", ["Yes", "No"])
        'No'
        >>> leading_option("Yesterday it rained", ["Yes", "No"]) is None
        True
    """
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
    """The first JSON object in the text (control characters inside strings allowed), or None.

    The object starting at the earliest `{` that parses as one, as `json` would parse it, but
    with no recursion (any nesting depth) and in time linear in the text: each object start is
    parsed once, and a nested object's outcome is remembered for when it is tried on its own.
    Never raises on a string.

    Examples:
        >>> first_json_object('Sure: {"aspect": "hand", "n": [1, {"k": 2}]} and more')
        {'aspect': 'hand', 'n': [1, {'k': 2}]}
        >>> first_json_object("{not json} then {} ")
        {}
        >>> first_json_object("no object here") is None
        True
    """
    if not isinstance(text, str):
        return None
    known: dict[int, tuple[Any, int] | None] = {}
    for candidate in _OBJECT_START.finditer(text):
        start = candidate.start()
        found = known[start] if start in known else _parse_object(text, start, known)
        if found is not None:
            return found[0]
    return None


_WS = re.compile(r"[ \t\n\r]*")
_OPEN_ARRAYS = re.compile(r"(?:\[[ \t\n\r]*)+")
#: Where an object can start: `{` then `}`, or a complete key string and its colon (others fail at once).
_OBJECT_START = re.compile(r'\{(?=[ \t\n\r]*(?:\}|"(?:[^"\\]|\\.)*"[ \t\n\r]*:))', re.S)
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_CONSTANTS = (("true", True), ("false", False), ("null", None), ("NaN", math.nan), ("-Infinity", -math.inf),
              ("Infinity", math.inf))
_VALUE, _KEY, _ATTACH = range(3)


def _parse_object(text: str, start: int, known: dict[int, tuple[Any, int] | None]) -> tuple[Any, int] | None:
    """(object, end) of the JSON object at `start`, or None; records every object start it enters
    in `known` with its outcome (an object that failed inside fails the same way on its own)."""
    stack: list[list[Any]] = []  # [start, container, pending key, arrays still open around it]
    pos, state, value = start, _VALUE, None
    try:
        while True:
            if state == _VALUE:
                pos = _WS.match(text, pos).end()
                char = text[pos:pos + 1]
                if char == "{" and pos in known and known[pos] is not None:
                    value, pos = known[pos]
                    state = _ATTACH
                elif char == "{" and pos not in known:
                    stack.append([pos, {}, None, 0])
                    pos = _WS.match(text, pos + 1).end()
                    if text[pos:pos + 1] == "}":
                        value, pos, state = _close(stack, known, pos)
                    else:
                        state = _KEY
                elif char == "[":  # a run of openings is one frame: the outer arrays are made on closing
                    run = _OPEN_ARRAYS.match(text, pos)
                    stack.append([None, [], None, run.group().count("[") - 1])
                    pos = run.end()
                    if text[pos:pos + 1] == "]":
                        value, pos, state = _close(stack, known, pos)
                else:
                    value, pos = _scalar(text, pos)
                    state = _ATTACH
            elif state == _KEY:
                if text[pos:pos + 1] != '"':
                    raise ValueError("expected a key")
                key, pos = scanstring(text, pos + 1, False)
                pos = _WS.match(text, pos).end()
                if text[pos:pos + 1] != ":":
                    raise ValueError("expected ':'")
                stack[-1][2], pos, state = key, pos + 1, _VALUE
            else:  # _ATTACH: put the value into the open container, then expect ',' or its closer
                if not stack:
                    return value, pos
                frame = stack[-1]
                is_object = isinstance(frame[1], dict)
                if is_object:
                    frame[1][frame[2]] = value
                else:
                    frame[1].append(value)
                pos = _WS.match(text, pos).end()
                char = text[pos:pos + 1]
                if char == ",":
                    pos = _WS.match(text, pos + 1).end()
                    state = _KEY if is_object else _VALUE
                elif char == ("}" if is_object else "]"):
                    value, pos, state = _close(stack, known, pos)
                else:
                    raise ValueError("expected ',' or a closing bracket")
    except ValueError:  # JSONDecodeError, a bad number or escape: no object here
        for frame in stack:
            if isinstance(frame[1], dict):
                known[frame[0]] = None
        known.setdefault(start, None)
        return None


def _close(stack: list[list[Any]], known: dict[int, tuple[Any, int] | None], pos: int) -> tuple[Any, int, int]:
    """Close the innermost container at `pos` (its closing bracket); objects are remembered. A frame
    of several nested arrays gets its next outer array, which the closed one goes into."""
    frame = stack[-1]
    begin, container, _, outer = frame
    if outer:
        frame[1], frame[3] = [], outer - 1
    else:
        stack.pop()
    if isinstance(container, dict):
        known[begin] = (container, pos + 1)
    return container, pos + 1, _ATTACH


def _scalar(text: str, pos: int) -> tuple[Any, int]:
    """A JSON string, number or constant at `pos` (as `json` reads them), or ValueError."""
    char = text[pos:pos + 1]
    if char == '"':
        return scanstring(text, pos + 1, False)
    if char and char in "tfnNI-":
        for word, value in _CONSTANTS:
            if text.startswith(word, pos):
                return value, pos + len(word)
    number = _NUMBER.match(text, pos) if char and char in "-0123456789" else None
    if number is None:
        raise ValueError("expected a value")
    integer, fraction, exponent = number.groups()
    if fraction or exponent:
        return float(integer + (fraction or "") + (exponent or "")), number.end()
    return int(integer), number.end()  # ValueError past Python's digit limit: no object


def parse_evidence(text: str) -> Evidence | None:
    """Evidence from the text's first JSON object, or None when it is missing or incomplete.

    Examples:
        >>> parse_evidence('```json {"aspect": " cup ", "evidence": "It hovers above the table."} ```')
        Evidence(aspect='cup', evidence='It hovers above the table.')
        >>> parse_evidence('{"aspect": "cup"}') is None
        True
    """
    return _parse_model(text, Evidence)


def parse_reason(text: str) -> Reason | None:
    """A Reason from the text's first JSON object, or None when it is missing or has no reason.

    Examples:
        >>> parse_reason('{"reason": "It is a logo."}').reason
        'It is a logo.'
        >>> parse_reason("a logo") is None
        True
    """
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
