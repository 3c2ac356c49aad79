"""Reading the evaluation agent's answers; what cannot be read is an error, never a guess.

A reply is one question's answer (`parse_answer`) or the released evaluator's batched list
(`read_answer_list`, read as the FAGER release reads it). An unreadable reply is an
`AnswerParseError`, which the scorer counts as a parse failure and leaves out of every mean, so
no made-up answer moves a score. Every reader is linear in its input and raises nothing else.

docs/methods/fager.md, "Reading the judge's answers", lists the rules.
"""
from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from vlmjudge.text import remove_spans

from .schema import ANSWERS, MAX_RATIONALE, QuestionAnswer

#: Runs skipped around a leading answer word. Each is one character class under `*`, matched at
#: the start only, so it cannot backtrack: linear time on any input.
_SPACE_OR_DECORATION = re.compile(r"[\s*_\"'`]*")  # spaces, markdown emphasis, quotes
_DECORATION = re.compile(r"[*_\"'`]*")
_SPACE_OR_SEPARATOR = re.compile(r"[\s.,:;!\-\u2013\u2014]*")  # between the word and its rationale
_LABELS = ("rationale", "reason", "because")


class AnswerParseError(ValueError):
    """The text holds no readable yes/no/unknown answer.

    Examples:
        >>> parse_answer("I cannot tell from this image.")
        Traceback (most recent call last):
        ...
        fager.parsing.AnswerParseError: no yes/no/unknown answer in 'I cannot tell from this image.'
        >>> issubclass(AnswerParseError, ValueError)
        True
    """


def normalize_answer(value: Any) -> str:
    """yes / no / unknown from an `answer` field's value, as the FAGER release normalises it.

    `str(value).strip().lower()`; anything else (a sentence, "Yes.", "maybe", a number, null)
    is "unknown", the release's score of 0.5.

    Examples:
        >>> normalize_answer(" YES "), normalize_answer("Yes."), normalize_answer(None)
        ('yes', 'unknown', 'unknown')
    """
    word = str(value).strip().lower()
    return word if word in ANSWERS else "unknown"


def parse_answer(text: str | None) -> QuestionAnswer:
    """Read a JSON object or a leading yes/no/unknown from model output; raise AnswerParseError otherwise.

    Examples:
        >>> parse_answer('{"answer": "No", "rationale": "The cup is blue."}')
        QuestionAnswer(answer='no', rationale='The cup is blue.')
        >>> parse_answer("Answer: **yes** - a red cup stands on the table")
        QuestionAnswer(answer='yes', rationale='a red cup stands on the table')
    """
    if not isinstance(text, str) or not text.strip():
        raise AnswerParseError("empty answer")
    body = strip_fence(text)
    start, end = body.find("{"), body.rfind("}")
    if start != -1 and end > start:
        return _from_json(body[start:end + 1])
    return _from_leading_word(body, text)


def strip_fence(text: str) -> str:
    """The text without surrounding whitespace and a markdown code fence (```lang ... ```).

    Examples:
        >>> strip_fence('```json {"answer": "yes"} ```')
        '{"answer": "yes"}'
    """
    body = text.strip()
    if body.startswith("```"):
        rest = body[3:]
        name_end = 0
        while name_end < len(rest) and rest[name_end].isascii() and rest[name_end].isalpha():
            name_end += 1
        body = rest[name_end:].lstrip()
    if body.endswith("```"):
        body = body[:-3].rstrip()
    return body


def _from_leading_word(body: str, text: str) -> QuestionAnswer:
    """`[Answer:] yes|no|unknown [punctuation] [Rationale:] rest`, emphasis and quotes allowed."""
    rest = _skip(body, _SPACE_OR_DECORATION)
    if rest[:6].lower() == "answer":
        after = rest[6:].lstrip()
        if after[:1] in (":", "=", "-"):
            rest = _skip(after[1:].lstrip(), _DECORATION)
    for word in ANSWERS:
        head, tail = rest[:len(word)], rest[len(word):]
        if head.lower() == word and not (tail[:1].isalnum() or tail[:1] == "_"):
            tail = _skip(_skip(tail, _DECORATION), _SPACE_OR_SEPARATOR)
            return _question_answer(word, _strip_label(tail.strip())[:MAX_RATIONALE], text)
    raise AnswerParseError(f"no yes/no/unknown answer in {_preview(text)}")


def _skip(text: str, run: re.Pattern) -> str:
    """The text after the run of `run`'s characters at its start."""
    return text[run.match(text).end():]


def _strip_label(rationale: str) -> str:
    """The rationale without a leading `Rationale:` / `Reason:` / `Because` label."""
    lowered = rationale[:10].lower()
    for label in _LABELS:
        if lowered.startswith(label):
            rest = rationale[len(label):].lstrip()
            if rest[:1] in (":", "=", "-"):
                rest = rest[1:]
            return rest.lstrip()
    return rationale


def load_json(text: str, *, strict: bool = False) -> Any:
    """`json.loads` that fails only with AnswerParseError (bad JSON, deep nesting, huge integers).

    `strict=False` (the default) accepts raw control characters such as tabs inside strings.

    Examples:
        >>> load_json('{"answer": "yes"}')
        {'answer': 'yes'}
        >>> load_json("[1, 2")
        Traceback (most recent call last):
        ...
        fager.parsing.AnswerParseError: invalid JSON (Expecting ',' delimiter) in '[1, 2'
    """
    try:
        return json.loads(text, strict=strict)
    except json.JSONDecodeError as error:
        raise AnswerParseError(f"invalid JSON ({error.msg}) in {_preview(text)}") from None
    except (ValueError, RecursionError) as error:  # int digit limit; nesting deeper than the stack
        raise AnswerParseError(f"unreadable JSON ({type(error).__name__}) in {_preview(text)}") from None


def _from_json(fragment: str) -> QuestionAnswer:
    data = load_json(fragment)
    if not isinstance(data, dict) or "answer" not in data:
        raise AnswerParseError(f"JSON answer without an 'answer' key: {_preview(fragment)}")
    rationale = data.get("rationale", "")
    if rationale is None:
        rationale = ""
    if not isinstance(rationale, str):
        raise AnswerParseError(f"JSON answer with a non-string rationale: {_preview(fragment)}")
    return _question_answer(normalize_answer(data["answer"]), rationale.strip()[:MAX_RATIONALE], fragment)


def _question_answer(answer: str, rationale: str, source: str) -> QuestionAnswer:
    """The answer as the schema holds it; text the schema refuses (a lone surrogate, which no
    record can be written with) is an AnswerParseError, counted as a parse failure by the scorer."""
    try:
        return QuestionAnswer(answer=answer, rationale=rationale)
    except ValidationError as error:
        problem = error.errors(include_url=False, include_input=False)[0]["msg"]
        raise AnswerParseError(f"unreadable answer ({problem}) in {_preview(source)}") from None


def remove_thinking(text: str) -> str:
    """The text without `<think>...</think>` blocks (an unclosed block is kept as text).

    Examples:
        >>> remove_thinking("<think>The cup looks blue.</think>no")
        'no'
    """
    return remove_spans(text, "<think>", "</think>")


def read_answer_list(text: str, *, strip_thinking: bool = False) -> list[dict[str, Any]]:
    """The answers of a batched evaluator reply, in question order, as the FAGER release reads them.

    The reply is `{"answers": [{"id": i, "answer": ..., "rationale": ...}, ...]}`, possibly
    fenced or inside prose (the text from the first `{` to the last `}` is tried when the
    whole does not parse). Entries are ordered by `int(id)` (a missing id counts as 0; the
    sort is stable); each comes back as `{"answer": <the value as written>, "rationale": ...}`,
    an entry without an answer as "unknown" (the release's default). Normalise the values
    with `normalize_answer`. `strip_thinking=True` first removes `<think>` blocks, as the
    release's Qwen evaluator does. Anything else raises AnswerParseError: a reply that is not
    JSON, an `answers` that is not a list of objects, an id that is not an integer.

    Examples:
        Entries come back in id order; one without an answer is unknown:

        >>> read_answer_list('Here: {"answers": [{"id": 2, "answer": "no", "rationale": "blue"}, {"id": 1}]}')
        [{'answer': 'unknown', 'rationale': ''}, {'answer': 'no', 'rationale': 'blue'}]
    """
    if not isinstance(text, str):
        raise AnswerParseError(f"a reply must be text, got {type(text).__name__}")
    body = strip_fence(remove_thinking(text) if strip_thinking else text)
    try:
        data = load_json(body, strict=True)
    except AnswerParseError:
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end <= start:
            raise
        data = load_json(body[start:end + 1], strict=True)
    if not isinstance(data, dict):
        raise AnswerParseError(f"the reply is a JSON {type(data).__name__}, not an object: {_preview(text)}")
    entries = data.get("answers", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise AnswerParseError(f"'answers' must be a list of objects: {_preview(text)}")
    order = [_entry_id(entry) for entry in entries]
    ranked = sorted(range(len(entries)), key=order.__getitem__)
    return [{"answer": answer_value(entries[i]), "rationale": entries[i].get("rationale", "")} for i in ranked]


def answer_value(entry: Any) -> Any:
    """The `answer` of one entry of a batched reply, as written; "unknown" when the entry has none
    (the release's default). AnswerParseError when the entry is not a JSON object.

    Examples:
        >>> answer_value({"id": 1, "answer": "Yes"}), answer_value({"id": 2})
        ('Yes', 'unknown')
    """
    if not isinstance(entry, dict):
        raise AnswerParseError(f"an answer entry must be a JSON object, got {type(entry).__name__}")
    return entry.get("answer", "unknown")


def _entry_id(entry: dict[str, Any]) -> int:
    """`int(id)` as the release sorts by it; a missing id is 0, a non-integer one an error."""
    value = entry.get("id", 0)
    problem = AnswerParseError(f"answer id {_preview(repr(value))} is not an integer")
    if not isinstance(value, (int, float, str)):
        raise problem
    try:
        return int(value)
    except (ValueError, OverflowError) as error:
        raise problem from error


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
