"""Reading the judge's JSON answers, and token budgets that let constrained JSON close.

The default reading is the public release's (`reading="release"`): the text from the first `{`
to the last `}`, parsed as strict JSON, so a replayed or recorded answer reads the same here
as there. `reading="tolerant"` is this project's earlier, more forgiving reading for backends
without grammar support: the whole text (code fences stripped) or else the first complete
object inside the prose, raw control characters allowed in strings.

Either way, any text (degenerate model output included: megabytes, deep nesting, numbers
longer than Python's int limit) gives a value or a `JSONReadError`, in time linear in its
length. Anything that still does not validate is a `ParseFailure`: counted and reported by the
caller, never a score.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from vlmjudge.requests import Answer

M = TypeVar("M", bound=BaseModel)

#: The ways an answer's JSON can be read (see the module docstring); the first is the default.
READINGS = ("release", "tolerant")
_FENCE_OPEN = ("```json", "```JSON", "```Json", "```")
#: Strings may hold raw control characters (small models write them) in the tolerant reading.
_LENIENT = json.JSONDecoder(strict=False)


class JSONReadError(ValueError):
    """The answer holds no readable JSON object: the one error the readers here raise.

    Examples:
        >>> extract_json("no braces at all")
        Traceback (most recent call last):
        ...
        regeneration.parsing.JSONReadError: no JSON object in the answer
        >>> issubclass(JSONReadError, ValueError)
        True
    """


@dataclass(frozen=True)
class ParseFailure:
    """Why an answer could not be read (kept in run records and counted).

    Examples:
        >>> failure = ParseFailure("prompt_variants", "invalid JSON", "{oops")
        >>> failure.to_json()
        {'stage': 'prompt_variants', 'reason': 'invalid JSON', 'text': '{oops'}
    """

    stage: str
    reason: str
    text: str

    def to_json(self) -> dict[str, str]:
        """The failure as a JSON record, its text cut to 500 characters.

        Examples:
            >>> len(ParseFailure("judge", "cut off", "x" * 900).to_json()["text"])
            500
        """
        return {"stage": self.stage, "reason": self.reason, "text": self.text[:500]}


def _guarded(parse, *args: Any) -> Any:
    """Run a json parse step with every way it can fail on hostile text turned into JSONReadError."""
    try:
        return parse(*args)
    except json.JSONDecodeError as exc:
        raise JSONReadError(f"invalid JSON: {exc.msg} at {exc.pos}") from None
    except RecursionError:
        raise JSONReadError("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise JSONReadError(f"invalid JSON: {exc}") from None


def _strip_fences(text: str) -> str:
    """Text without a leading ```json / ``` line opener and a trailing ``` (plain string ops: linear)."""
    text = text.strip()
    for opener in _FENCE_OPEN:
        if text.startswith(opener):
            text = text[len(opener):].lstrip()
            break
    if text.endswith("```"):
        text = text[:-3].rstrip()
    return text


def _read_release(text: str) -> Any:
    """First `{` to last `}` (the release's greedy `\\{.*\\}` across lines), parsed strictly."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise JSONReadError("no JSON object in the answer")
    return _guarded(json.loads, text[start:end + 1])


def _read_tolerant(text: str) -> Any:
    """The whole text as JSON (fences stripped), else the first complete object in it."""
    stripped = _strip_fences(text)
    try:
        return _guarded(_LENIENT.decode, stripped)
    except JSONReadError:
        start = stripped.find("{")  # not JSON as a whole: the first object inside the prose
    if start < 0:
        raise JSONReadError("no JSON object in the answer")
    value, _ = _guarded(_LENIENT.raw_decode, stripped, start)
    return value


def extract_json(text: str, *, reading: str = "release") -> Any:
    """The JSON object of an answer, read as `reading` says (module docstring).

    Raises JSONReadError (a ValueError) when there is none; never anything else for a str.

    Examples:
        The release reading takes the first `{` to the last `}`; the tolerant one also reads
        the first complete object inside prose:

        >>> extract_json('Here you go: {"score": 7} Hope it helps.')
        {'score': 7}
        >>> extract_json('{"a": 1} and {"b": 2}', reading="tolerant")
        {'a': 1}
        >>> extract_json('{"a": 1} and {"b": 2}')
        Traceback (most recent call last):
        ...
        regeneration.parsing.JSONReadError: invalid JSON: Extra data at 9
    """
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    if not isinstance(text, str):
        raise JSONReadError(f"an answer is text, got {type(text).__name__}")
    return _read_release(text) if reading == "release" else _read_tolerant(text)


def prompt_variants(text: str, *, reading: str = "release") -> Any:
    """The `prompts` value of a prompt-variants answer as written (`[]` when the key is absent), as
    the release reads it; the caller checks that it is a list of prompts. Raises JSONReadError.

    Examples:
        >>> prompt_variants('{"prompts": ["a red cup", "a cup, red"]}')
        ['a red cup', 'a cup, red']
        >>> prompt_variants('{"other": 1}')
        []
    """
    data = extract_json(text, reading=reading)
    if not isinstance(data, dict):
        raise JSONReadError(f"the answer is a JSON {type(data).__name__}, not an object")
    return data.get("prompts", [])


def parse_answer(answer: Answer, model: type[M], stage: str, *, reading: str = "release") -> M | ParseFailure:
    """Validate an answer against `model`; a failed response, a cut-off or bad JSON is a ParseFailure.

    Examples:
        >>> from pydantic import BaseModel
        >>> from vlmjudge.requests import Answer
        >>> class Rating(BaseModel):
        ...     score: int
        >>> parse_answer(Answer('{"score": 4}'), Rating, "rating")
        Rating(score=4)
        >>> parse_answer(Answer('{"score": 4', finish_reason="length"), Rating, "rating").reason
        'no JSON object in the answer (the token budget ran out)'
        >>> parse_answer(Answer('{"score": "high"}'), Rating, "rating").reason
        'schema mismatch at score: Input should be a valid integer, unable to parse string as an integer'
    """
    if not answer.ok:
        return ParseFailure(stage, "the judge returned no answer (backend error)", answer.text)
    try:
        data = extract_json(answer.text, reading=reading)
    except JSONReadError as exc:
        reason = str(exc) + (" (the token budget ran out)" if answer.finish_reason == "length" else "")
        return ParseFailure(stage, reason, answer.text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_context=False, include_input=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return ParseFailure(stage, f"schema mismatch at {where or 'top level'}: {first.get('msg')}", answer.text)


def token_budget(schema: dict, *, floor: int = 32, cap: int = 4096) -> int:
    """A max_new_tokens under which any schema-valid answer fits, even one token per character.

    Strings count twice their maxLength (escapes), plus keys and punctuation; unbounded
    strings or arrays fall back to `cap`.

    Examples:
        A string of at most 20 characters counts 2 x 20 + 4 = 44, its key 7 + 6 (quotes, colon,
        comma), and the braces 4:

        >>> token_budget({"type": "object", "properties": {"caption": {"type": "string", "maxLength": 20}}})
        61
        >>> token_budget({"type": "string"})
        4096
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
