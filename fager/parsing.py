"""Tolerant reading of the evaluation agent's answers; what cannot be read is an error, never a guess."""
from __future__ import annotations

import json
import re

from pydantic import ValidationError

from fager.schema import MAX_RATIONALE, QuestionAnswer

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*|\s*```\s*$")
_LEADING_LABEL = re.compile(
    r"^[\s*_\"'`]*(?:answer\s*[:=\-]\s*)?[*_\"'`]*(yes|no|unknown)[*_\"'`]*(?![\w])[\s.,:;!\-\u2013\u2014]*(.*)$",
    re.IGNORECASE | re.DOTALL,
)
_RATIONALE_LABEL = re.compile(r"^(?:rationale|reason|because)\s*[:=\-]?\s*", re.IGNORECASE)


class AnswerParseError(ValueError):
    """The text holds no readable yes/no/unknown answer."""


def parse_answer(text: str | None) -> QuestionAnswer:
    """Read a JSON object or a leading yes/no/unknown from model output; raise AnswerParseError otherwise."""
    if text is None or not text.strip():
        raise AnswerParseError("empty answer")
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start != -1 and end > start:
        return _from_json(body[start:end + 1])
    match = _LEADING_LABEL.match(body)
    if match is None:
        raise AnswerParseError(f"no yes/no/unknown answer in {_preview(text)}")
    rationale = _RATIONALE_LABEL.sub("", match.group(2).strip())
    return QuestionAnswer(answer=match.group(1).lower(), rationale=rationale[:MAX_RATIONALE])


def _from_json(fragment: str) -> QuestionAnswer:
    try:
        data = json.loads(fragment, strict=False)
    except json.JSONDecodeError as error:
        raise AnswerParseError(f"invalid JSON answer ({error.msg}) in {_preview(fragment)}") from None
    if not isinstance(data, dict) or "answer" not in data:
        raise AnswerParseError(f"JSON answer without an 'answer' key: {_preview(fragment)}")
    rationale = data.get("rationale", "")
    if not isinstance(rationale, str):
        raise AnswerParseError(f"JSON answer with a non-string rationale: {_preview(fragment)}")
    try:
        return QuestionAnswer(answer=data["answer"], rationale=rationale.strip()[:MAX_RATIONALE])
    except ValidationError:
        raise AnswerParseError(f"answer {data['answer']!r} is not yes, no or unknown") from None


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
