"""Reading an OpenAI-compatible server's replies: every field checked before it is used.

Why apart from `wire` (the request bodies): a reply comes from a server we do not control. A
2xx body that is no chat completion at all is `UnparseableResponse` (a transport fault, retried);
one whose fields are wrong (content 42 or a list, a token count "abc", a logprob above 0, an
`error` beside `choices`, two choices, an answer longer than its `max_tokens` could spell) is
`MalformedResponse`, naming the field: the client fails that request and counts it, never
guesses. `reply_byte_cap` is how many bytes a legitimate reply to a body can take.
"""
from __future__ import annotations

import json
import math
from typing import Any

from ...requests import Answer

#: Characters one token can decode to, at most: far above the longest tokens of common vocabularies
#: (runs of spaces or punctuation), so that only an answer no tokenisation of `max_tokens` tokens
#: can spell is refused.
MAX_CHARS_PER_TOKEN = 1024
#: Bytes of JSON one character can take: `\uXXXX\uXXXX` for a character outside the BMP.
MAX_JSON_BYTES_PER_CHAR = 12
#: Bytes of one top-logprobs entry at most: its token, the token's UTF-8 bytes as a list of
#: numbers, and the logprob.
LOGPROB_ENTRY_BYTES = MAX_CHARS_PER_TOKEN * MAX_JSON_BYTES_PER_CHAR + MAX_CHARS_PER_TOKEN * 4 * 5 + 256
#: What a reply carries besides its tokens (ids, usage, an error page), with room to spare.
REPLY_OVERHEAD_BYTES = 1 << 20
#: A reply with `prompt_logprobs` lists every prompt token: 128k tokens at 512 bytes an entry.
PROMPT_LOGPROBS_BYTES = 64 << 20
#: How far above 0 a logprob may lie (float rounding); a larger one is a probability above 1.
LOGPROB_SLACK = 1e-6


class MalformedResponse(ValueError):
    """A 2xx chat completion whose fields cannot be used; the message names the field."""


class UnparseableResponse(MalformedResponse):
    """A 2xx body that is not a chat completion at all (truncated JSON, a proxy's HTML page):
    a transport fault, so the client retries it."""


def reply_byte_cap(body: dict[str, Any]) -> int:
    """The most bytes a legitimate reply to the request `body` (its standard and extension fields)
    can take: the overhead, `max_tokens` tokens of text, their top logprobs when asked, and the
    prompt's logprobs when asked.

    Examples:
        >>> reply_byte_cap({"max_tokens": 1, "logprobs": True, "top_logprobs": 20}) < 4 << 20
        True
    """
    tokens = int(body.get("max_tokens") or 1)
    per_token = MAX_CHARS_PER_TOKEN * MAX_JSON_BYTES_PER_CHAR
    if body.get("logprobs"):
        per_token += (int(body.get("top_logprobs") or 0) + 1) * LOGPROB_ENTRY_BYTES
    prompt = PROMPT_LOGPROBS_BYTES if body.get("prompt_logprobs") is not None else 0
    return REPLY_OVERHEAD_BYTES + tokens * per_token + prompt


def completion_json(raw: bytes) -> dict[str, Any]:
    """The chat-completion object of a 2xx body; UnparseableResponse unless the body is a JSON
    object with a non-empty `choices` list (what a truncated or foreign body never is)."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UnparseableResponse(f"2xx body is not JSON ({type(exc).__name__}): {_preview(raw)}") from exc
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UnparseableResponse(f"2xx body is not a chat completion: {_preview(raw)}")
    return body


def retry_after_seconds(exc: Any) -> float:
    """Seconds from the Retry-After header (seconds form) of an HTTP error, else 0."""
    try:
        return max(0.0, float(exc.response.headers.get("retry-after", "")))
    except (AttributeError, TypeError, ValueError):
        return 0.0


def _preview(raw: bytes) -> str:
    """The start of a body, for a log line."""
    return repr(raw[:120].decode("utf-8", "replace"))


def first_choice(body: dict[str, Any]) -> dict[str, Any]:
    """The one choice of a reply; MalformedResponse when the reply also carries an `error`, or
    more than the one choice asked for (the client never sends `n`)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse(f"chat completion without choices: {str(body)[:200]}")
    if body.get("error") is not None:
        raise MalformedResponse(f"the reply carries both `error` ({str(body['error'])[:120]}) and `choices`")
    if len(choices) != 1:
        raise MalformedResponse(f"the reply has {len(choices)} choices; one was asked for")
    return choices[0]


def answer_from(body: dict[str, Any], max_tokens: int) -> Answer:
    """The Answer of a chat-completion body ("length" when the budget ran out); MalformedResponse
    for content that is not text, a token count that is not one, or an answer longer than
    `max_tokens` tokens allow (more tokens counted, or more characters than they could spell)."""
    choice = first_choice(body)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedResponse(f"choices[0].message is {_kind(message)}, not an object")
    text = message.get("content")
    if text is None:
        raise MalformedResponse(f"choices[0].message.content is null (finish_reason "
                                f"{choice.get('finish_reason')!r})")
    if not isinstance(text, str):
        raise MalformedResponse(f"choices[0].message.content is {_kind(text)}, not text")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise MalformedResponse(f"choices[0].finish_reason is {_kind(finish)}, not a string")
    tokens = usage_counts(body)[1]
    if tokens > max_tokens:
        raise MalformedResponse(f"usage.completion_tokens is {tokens}, above the max_tokens {max_tokens} asked")
    if len(text) > max_tokens * MAX_CHARS_PER_TOKEN:
        raise MalformedResponse(f"choices[0].message.content has {len(text)} characters, more than "
                                f"{max_tokens} tokens (max_tokens) can spell")
    return Answer(text=text, finish_reason="length" if finish == "length" else "stop", num_tokens=tokens)


def first_token_alternatives(body: dict[str, Any]) -> list[tuple[str, float]] | None:
    """(token, logprob) pairs of the first generated token, or None when the server sent none;
    MalformedResponse for a token that is not text or a logprob that is not a log-probability."""
    where = "choices[0].logprobs"
    logprobs = first_choice(body).get("logprobs")
    if logprobs is None:
        return None
    if not isinstance(logprobs, dict):
        raise MalformedResponse(f"{where} is {_kind(logprobs)}, not an object")
    content = logprobs.get("content")
    if not content:
        return None
    if not isinstance(content, list) or not isinstance(content[0], dict):
        raise MalformedResponse(f"{where}.content is {_kind(content)}, not a list of tokens")
    first = content[0]
    top = first.get("top_logprobs")
    if top is not None and not isinstance(top, list):
        raise MalformedResponse(f"{where}.content[0].top_logprobs is {_kind(top)}, not a list")
    if top:
        return [_token_logprob(entry, f"{where}.content[0].top_logprobs[{i}]") for i, entry in enumerate(top)]
    return [_token_logprob(first, f"{where}.content[0]")] if first.get("token") is not None else None


def _token_logprob(entry: Any, where: str) -> tuple[str, float]:
    """(token, logprob) of one logprobs entry, each checked."""
    if not isinstance(entry, dict):
        raise MalformedResponse(f"{where} is {_kind(entry)}, not an object")
    token, logprob = entry.get("token"), entry.get("logprob")
    if not isinstance(token, str):
        raise MalformedResponse(f"{where}.token is {_kind(token)}, not text")
    return token, checked_logprob(logprob, f"{where}.logprob")


def checked_logprob(value: Any, where: str) -> float:
    """A log-probability as a server sent it: a number at most 0 (-inf allowed: probability 0);
    MalformedResponse naming `where` otherwise (a string, a bool, NaN, above 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise MalformedResponse(f"{where} is {_kind(value)}, not a log-probability")
    if value > LOGPROB_SLACK:
        raise MalformedResponse(f"{where} is {value!r}: above 0, a probability above 1")
    return float(value)


def usage_counts(body: dict[str, Any]) -> tuple[int, int, int]:
    """(prompt tokens, completion tokens, cached prompt tokens) from a response's `usage`; the
    cached count is `usage.prompt_tokens_details.cached_tokens` (vLLM, SGLang, OpenAI). A count
    the server leaves out (or null) is 0; one that is not a count is MalformedResponse."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if usage is None:
        return 0, 0, 0
    if not isinstance(usage, dict):
        raise MalformedResponse(f"usage is {_kind(usage)}, not an object")
    details = usage.get("prompt_tokens_details")
    if details is not None and not isinstance(details, dict):
        raise MalformedResponse(f"usage.prompt_tokens_details is {_kind(details)}, not an object")
    cached = (details or {}).get("cached_tokens")
    return (_count_of(usage.get("prompt_tokens"), "usage.prompt_tokens"),
            _count_of(usage.get("completion_tokens"), "usage.completion_tokens"),
            _count_of(cached, "usage.prompt_tokens_details.cached_tokens"))


def _count_of(value: Any, where: str) -> int:
    """A token count as a server sent it: a whole number >= 0, or null / missing (0)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedResponse(f"{where} is {_kind(value)}, not a token count")
    return value


def _kind(value: Any) -> str:
    """A value as a message names it: its JSON type and, when short, itself."""
    shown = repr(value)
    return f"{type(value).__name__} {shown}" if len(shown) <= 40 else f"a {type(value).__name__}"
