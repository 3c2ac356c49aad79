"""The OpenAI-compatible chat-completions wire format, shared by client and server.

Why one module: the OpenAI-compatible backend (`vlmjudge.backends.openai`) writes request
bodies and reads response bodies, and `vlmjudge serve` reads the one and writes the other;
with both directions here, the two sides cannot drift apart. Pure functions, no HTTP.

A request body is split into the fields the OpenAI SDK knows (`standard`) and the
extensions vLLM, SGLang and `vlmjudge serve` read (`extra`, sent as `extra_body`). Images
travel as base64 PNG data URLs (`png_data_url`, read back by `data_url_bytes`). Responses
are chat.completion objects (`completion_body`, `options_completion_body`, `error_body`),
read back by `completion_json`, `answer_from`, `first_token_alternatives`, `options_from`
and `usage_counts`.
"""
from __future__ import annotations

import base64
import binascii
import io
import json
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .images import image_bytes_digest
from .options import OptionProbs, as_option_probs
from .requests import Answer, Request

#: Extension field naming the options of a `choice_probs` call; `vlmjudge serve` answers
#: it with exactly these options as the first token's `top_logprobs`.
OPTIONS_FIELD = "vlmjudge_options"
#: Extension field restricting the first answer token to these words (`Constraint.first_options`);
#: honoured by `vlmjudge serve`, ignored by servers that do not know it.
FIRST_OPTIONS_FIELD = "vlmjudge_first_options"
#: Extension field carrying a choice_probs request's own decoding parameters (the body asks
#: for one greedy token), so `vlmjudge serve` rebuilds the very Request the caller made.
DECODING_FIELD = "vlmjudge_decoding"
#: Where each server family reads an EBNF grammar: vLLM (current), vLLM (older), SGLang.
GRAMMAR_FIELDS = ("structured_outputs", "guided_grammar", "ebnf")
#: Name of the schema in `response_format` (OpenAI requires one).
SCHEMA_NAME = "vlmjudge_output"


@dataclass
class WireBody:
    """One chat-completion request: SDK keyword arguments and the extension fields."""

    standard: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def merged(self) -> dict[str, Any]:
        """The whole JSON body (for a Batch-API input line)."""
        return {**self.standard, **self.extra}


class ImageURLs:
    """PNG data URLs by pixel digest, so an image shared by many requests is encoded once."""

    def __init__(self) -> None:
        self._by_digest: dict[str, str] = {}
        self._digests: dict[int, tuple[Any, str]] = {}  # id -> (image kept alive, digest)

    def digest(self, image: Any) -> str:
        known = self._digests.get(id(image))
        if known is None or known[0] is not image:
            known = self._digests[id(image)] = (image, image_bytes_digest(image))
        return known[1]

    def url(self, image: Any) -> str:
        key = self.digest(image)
        if key not in self._by_digest:
            self._by_digest[key] = png_data_url(image)
        return self._by_digest[key]


def png_data_url(image: Any) -> str:
    """A PIL image as the base64 PNG data URL an `image_url` part carries (lossless).

    Examples:
        >>> from PIL import Image
        >>> url = png_data_url(Image.new("RGB", (2, 2)))
        >>> url.startswith("data:image/png;base64,"), data_url_bytes(url)[:4]
        (True, b'\\x89PNG')
    """
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def data_url_bytes(image_url: Any) -> bytes:
    """The bytes of an `image_url` value (`{"url": ...}` or the URL itself); ValueError unless
    it is a base64 data URL, so that a server reading it never fetches anything.

    Examples:
        >>> data_url_bytes({"url": "data:image/png;base64,aGk="})
        b'hi'
        >>> data_url_bytes("https://example.org/cat.png")
        Traceback (most recent call last):
        ...
        ValueError: only base64 data URLs are accepted (this server fetches nothing)
    """
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ValueError("only base64 data URLs are accepted (this server fetches nothing)")
    header, _, data = url.partition(",")
    if not header.endswith(";base64"):
        raise ValueError("the data URL must be base64-encoded")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"bad base64 ({exc})") from exc


def chat_messages(request: Request, urls: ImageURLs) -> list[dict[str, Any]]:
    """The request's turns in OpenAI form: `{"type": "image"}` parts become image_url data URLs,
    and a non-empty prefix becomes a final assistant message to continue."""
    images = iter(request.pil_images())
    out: list[dict[str, Any]] = []
    for turn in request.chat():
        content = turn.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image":
                    parts.append({"type": "image_url", "image_url": {"url": urls.url(next(images))}})
                elif part.get("type") == "text":
                    parts.append({"type": "text", "text": part.get("text", "")})
                else:
                    raise ValueError(f"message part of type {part.get('type')!r} cannot be sent to an "
                                     "OpenAI-compatible server (only text and image)")
            content = parts
        out.append({"role": turn.get("role"), "content": content})
    if request.prefix:
        out.append({"role": "assistant", "content": request.prefix})
    return out


def generate_body(request: Request, model: str, urls: ImageURLs, grammar_field: str) -> WireBody:
    """The body that generates the request's answer: decoding, constraint and prefix."""
    d = request.decoding
    standard: dict[str, Any] = {"model": model, "messages": chat_messages(request, urls),
                                "max_tokens": d.max_new_tokens, "temperature": d.temperature, "top_p": d.top_p}
    if d.seed is not None:
        standard["seed"] = d.seed
    if d.stop:
        standard["stop"] = list(d.stop)
    extra = _prefix_fields(request)
    c = request.constraint
    if c is not None:
        if c.kind == "json_schema":
            from .grammar import server_json_schema
            standard["response_format"] = {"type": "json_schema", "json_schema": {
                "name": SCHEMA_NAME, "schema": server_json_schema(c), "strict": True}}
        elif c.kind == "ebnf":
            extra.update(grammar_extension(c.spec, grammar_field))
        else:
            raise ValueError(f"unknown constraint kind {c.kind!r}")
        if c.first_options:
            extra[FIRST_OPTIONS_FIELD] = list(c.first_options)
    return WireBody(standard, extra)


def probs_body(request: Request, model: str, urls: ImageURLs, options: Sequence[str], top_logprobs: int) -> WireBody:
    """The body that reads the first answer token's distribution: one greedy token with logprobs."""
    standard = {"model": model, "messages": chat_messages(request, urls), "max_tokens": 1, "temperature": 0.0,
                "logprobs": True, "top_logprobs": top_logprobs}
    extra = {**_prefix_fields(request), OPTIONS_FIELD: list(options), DECODING_FIELD: request.decoding.to_json()}
    return WireBody(standard, extra)


def fallback_body(probs: WireBody, max_tokens: int) -> WireBody:
    """A short greedy generation, for the same messages as a `probs_body`, whose leading option
    stands in for logprobs the server did not give."""
    standard = {"model": probs.standard["model"], "messages": probs.standard["messages"],
                "max_tokens": max_tokens, "temperature": 0.0}
    extra = {k: v for k, v in probs.extra.items() if k not in (OPTIONS_FIELD, DECODING_FIELD)}
    return WireBody(standard, extra)


def grammar_extension(grammar: str, grammar_field: str) -> dict[str, Any]:
    """An EBNF grammar in the extension field the server family reads."""
    if grammar_field == "structured_outputs":
        return {"structured_outputs": {"grammar": grammar}}
    if grammar_field in ("guided_grammar", "ebnf"):
        return {grammar_field: grammar}
    raise ValueError(f"grammar_field must be one of {GRAMMAR_FIELDS}, got {grammar_field!r}")


def _prefix_fields(request: Request) -> dict[str, Any]:
    # vLLM / SGLang: continue the final assistant message instead of opening a new turn.
    return {"continue_final_message": True, "add_generation_prompt": False} if request.prefix else {}


def completion_body(model: str, answer: Answer) -> dict[str, Any]:
    """A chat.completion object for a generated answer (what `answer_from` reads back).

    Examples:
        >>> body = completion_body("judge", Answer("Yes", "stop", 1))
        >>> answer_from(body).text, body["choices"][0]["finish_reason"]
        ('Yes', 'stop')
    """
    return _envelope(model, {"role": "assistant", "content": answer.text}, answer.finish_reason, None,
                     answer.num_tokens)


def options_completion_body(model: str, probs: dict[str, float]) -> dict[str, Any]:
    """A one-token chat.completion whose first token's top_logprobs are the options (those with
    non-zero probability, most likely first), the options' probabilities normalised over them:
    the answer to a `probs_body` that named its options in OPTIONS_FIELD. The whole
    `OptionProbs` (every option, the mass, any bounds) rides along in OPTIONS_FIELD, which
    `options_from` reads back; other clients read the top_logprobs.

    Examples:
        >>> body = options_completion_body("judge", {"Yes": 0.75, "No": 0.25, "Maybe": 0.0})
        >>> [(t, round(lp, 3)) for t, lp in first_token_alternatives(body)]
        [('Yes', -0.288), ('No', -1.386)]
    """
    ranked = sorted(((o, p) for o, p in probs.items() if p > 0), key=lambda x: -x[1])
    if not ranked:
        raise ValueError("choice probabilities with no mass")
    top = [{"token": o, "logprob": math.log(p), "bytes": list(o.encode("utf-8"))} for o, p in ranked]
    logprobs = {"content": [{**top[0], "top_logprobs": top}]}
    body = _envelope(model, {"role": "assistant", "content": ranked[0][0]}, "length", logprobs, 1)
    return {**body, OPTIONS_FIELD: as_option_probs(probs).to_json()}


def options_from(body: dict[str, Any], options: Sequence[str]) -> OptionProbs | None:
    """The `OptionProbs` a `vlmjudge serve` response carries for exactly these options, else None.

    Examples:
        >>> options_from(options_completion_body("judge", {"Yes": 0.75, "No": 0.25}), ["Yes", "No"])
        {'Yes': 0.75, 'No': 0.25}
    """
    value = body.get(OPTIONS_FIELD) if isinstance(body, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("probs"), dict) or set(value["probs"]) != set(options):
        return None
    return OptionProbs.from_json(value)


def _envelope(model: str, message: dict[str, Any], finish: str, logprobs: Any, tokens: int) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}}


def error_body(message: str, kind: str, status: int) -> dict[str, Any]:
    """The OpenAI error envelope."""
    return {"error": {"message": message, "type": kind, "code": status}}


class MalformedResponse(ValueError):
    """A 200 response without the fields a chat completion must have."""


class UnparseableResponse(MalformedResponse):
    """A 2xx body that is not a chat completion at all (truncated JSON, a proxy's HTML page):
    a transport fault, so the client retries it."""


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
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise MalformedResponse(f"chat completion without choices: {str(body)[:200]}")
    return choices[0]


def answer_from(body: dict[str, Any]) -> Answer:
    """The Answer of a chat-completion body ("length" when the budget ran out)."""
    choice = first_choice(body)
    message = choice.get("message") or {}
    text = message.get("content")
    if text is None:
        raise MalformedResponse(f"chat completion without message content (finish_reason "
                                f"{choice.get('finish_reason')!r})")
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    usage = body.get("usage") or {}
    return Answer(text=text, finish_reason=finish, num_tokens=int(usage.get("completion_tokens") or 0))


def first_token_alternatives(body: dict[str, Any]) -> list[tuple[str, float]] | None:
    """(token, logprob) pairs of the first generated token, or None when the server sent none."""
    logprobs = first_choice(body).get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    first = content[0]
    pairs = [(t.get("token"), t.get("logprob")) for t in (first.get("top_logprobs") or [])]
    if not pairs and first.get("token") is not None:
        pairs = [(first.get("token"), first.get("logprob"))]
    return [(tok, float(lp)) for tok, lp in pairs if isinstance(tok, str) and lp is not None]


def prompt_segments(request: Request, urls: ImageURLs) -> tuple:
    """The request's prompt as the server reads it, in order, cut where requests can differ:
    each turn's role, then its parts (text, or an image as its pixel digest), then the
    assistant prefix. Two requests share a server-side prefix at least as long as their
    common leading segments."""
    images = iter(request.pil_images())
    out: list[tuple] = []
    for turn in request.chat():
        out.append(("role", turn.get("role")))
        content = turn.get("content")
        for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if part.get("type") == "image":
                out.append(("image", urls.digest(next(images))))
            else:
                out.append(("text", part.get("text", "")))
    if request.prefix:
        out.append(("prefix", request.prefix))
    return tuple(out)


def grouped_order(requests: Sequence[Request], urls: ImageURLs) -> list[int]:
    """Indices in prefix order: requests that share leading segments (`prompt_segments`: the
    system turn, an image, ...) adjacent, the longest shared prefixes closest, so a server's
    prefix cache (vLLM, SGLang) finds each prefix while it still holds it.

    It is the depth-first walk of the segment trie with children in order of first appearance,
    and stable: requests that tie keep the caller's order. Each request sorts by the positions
    where each of its leading prefixes first appears."""
    first_seen: dict[tuple, int] = {}
    keys = []
    for i, r in enumerate(requests):
        segments = prompt_segments(r, urls)
        keys.append(tuple(first_seen.setdefault(segments[:d], i) for d in range(1, len(segments) + 1)))
    return sorted(range(len(requests)), key=lambda i: (keys[i], i))


def in_callers_order(order: Sequence[int], ordered: Sequence[Any]) -> list[Any]:
    """Results computed for `requests[i] for i in order`, put back at each request's position."""
    results: list[Any] = [None] * len(order)
    for position, i in enumerate(order):
        results[i] = ordered[position]
    return results


def usage_counts(body: dict[str, Any]) -> tuple[int, int, int]:
    """(prompt tokens, completion tokens, cached prompt tokens) from a response's `usage`; the
    cached count is `usage.prompt_tokens_details.cached_tokens` (vLLM, SGLang, OpenAI), 0 when
    the server gives none."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, 0
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return _count_of(usage.get("prompt_tokens")), _count_of(usage.get("completion_tokens")), _count_of(cached)


def _count_of(value: Any) -> int:
    """A token count as a server sent it (a number, null or missing)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
