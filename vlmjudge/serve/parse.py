"""Chat-completion request bodies to judge calls (the response bodies are built by `vlmjudge.wire`).

The inverse of `vlmjudge.wire`'s request side: a body sent by the OpenAI-compatible
backend (or any OpenAI client) becomes the same `Request` the caller built, so a judge
behind `vlmjudge serve` answers exactly what it would answer in-process.

Every field is type-checked here, so that a bad body is a `BadRequest` (HTTP 400), never
an exception inside the server: NaN and infinities are refused while the JSON is decoded,
and `ServeLimits` bounds what one request may ask for.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Literal

from ..images import DEFAULT_MAX_PIXELS, ImageInputError, to_pil
from ..requests import Constraint, Decoding, Request
from ..wire import DECODING_FIELD, FIRST_OPTIONS_FIELD, GRAMMAR_FIELDS, OPTIONS_FIELD, data_url_bytes


class BadRequest(ValueError):
    """A body this server cannot answer: HTTP 400 (or `status`) with the message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ServeLimits:
    """What one request may ask of the server (all settable by `vlmjudge serve` flags)."""

    #: A larger max_tokens is lowered to this (the answer then ends with finish_reason "length").
    max_tokens: int = 4096
    #: Prompt text tokens (images are bounded by `max_image_pixels`); more is HTTP 400.
    max_prompt_tokens: int = 32768
    #: Request body size (base64 images included); more is HTTP 413, refused before the body is read.
    max_body_bytes: int = 256 * 1024 * 1024
    #: Pixels of one image, checked from its header before it is decoded.
    max_image_pixels: int = DEFAULT_MAX_PIXELS
    #: Nesting of the JSON body (JSON schemas included).
    max_json_depth: int = 64
    #: Stop strings per request.
    max_stop: int = 16
    #: Seconds one socket read may wait, and the whole body may take, before HTTP 408.
    read_timeout_s: float = 30.0
    body_timeout_s: float = 300.0
    #: Requests waiting or running in the batcher; one more is HTTP 503 (clients retry). The
    #: listen backlog is at least this, so that many clients connecting at once are all accepted.
    max_queue: int = 1024

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_prompt_tokens", "max_body_bytes", "max_image_pixels", "max_json_depth",
                     "max_stop", "max_queue"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.read_timeout_s > 0 and self.body_timeout_s > 0):
            raise ValueError("read_timeout_s and body_timeout_s must be > 0")


def decode_json(data: bytes, limits: ServeLimits | None = None) -> Any:
    """The JSON value of a body: strict UTF-8, no NaN or infinity (1e400 included), nesting
    bounded by `limits.max_json_depth`."""
    limits = limits or ServeLimits()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not UTF-8: {exc}") from exc
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise BadRequest(f"the body nests deeper than {limits.max_json_depth} levels") from exc
    except ValueError as exc:  # a non-finite number, or an integer over Python's digit limit
        raise BadRequest(f"the body has a number this server does not accept: {exc}") from exc
    if _depth(value) > limits.max_json_depth:
        raise BadRequest(f"the body nests deeper than {limits.max_json_depth} levels")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} overflows to infinity")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


@dataclass
class Call:
    """One judge call: generate a request, or its choice probabilities over options."""

    op: Literal["generate", "choice_probs"]
    request: Request
    options: tuple[str, ...] | None = None

    @property
    def group(self) -> tuple[str, tuple[str, ...] | None]:
        """Calls with the same group can share one batched judge call."""
        return (self.op, self.options)


def parse_chat_body(body: Any, limits: ServeLimits | None = None,
                    count_tokens: Callable[[str], int] | None = None) -> Call:
    """The judge call a chat-completions body asks for; BadRequest says what is wrong.
    `count_tokens` counts prompt tokens for `limits.max_prompt_tokens` (default: UTF-8 bytes,
    an upper bound for byte-level tokenizers).

    Examples:
        >>> from vlmjudge.requests import Request
        >>> from vlmjudge.wire import ImageURLs, probs_body
        >>> sent = Request(text="Is the sky blue?", prefix="Answer:")
        >>> call = parse_chat_body(probs_body(sent, "judge", ImageURLs(), ["Yes", "No"], 5).merged())
        >>> call.op, call.options, call.request.content_hash() == sent.content_hash()
        ('choice_probs', ('Yes', 'No'), True)
        >>> parse_chat_body({"messages": []})
        Traceback (most recent call last):
        ...
        vlmjudge.serve.parse.BadRequest: messages must be a non-empty list
    """
    limits = limits or ServeLimits()
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if body.get("model") is not None and not isinstance(body["model"], str):
        raise BadRequest("model must be a string")
    if body.get("stream"):
        raise BadRequest("stream=true is not supported by vlmjudge serve")
    if body.get("n") not in (None, 1):
        raise BadRequest("only n=1 is supported")
    if body.get("tools"):
        raise BadRequest("tools are not supported")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    prefix = ""
    if body.get("continue_final_message"):
        last = messages[-1]
        if not isinstance(last, dict) or last.get("role") != "assistant":
            raise BadRequest("continue_final_message needs a final assistant message")
        prefix = _text_of(last.get("content"), where="the final assistant message")
        messages = messages[:-1]
    turns, images = _turns(messages, limits)
    _check_prompt_tokens(turns, prefix, limits, count_tokens)
    try:
        request = Request(images=images, messages=turns, decoding=_decoding(body, limits),
                          constraint=_constraint(body), prefix=prefix)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    options = body.get(OPTIONS_FIELD)
    if options is not None:
        if (not isinstance(options, list) or not all(isinstance(o, str) and o for o in options)
                or len(options) < 2 or len(set(options)) != len(options)):
            raise BadRequest(f"{OPTIONS_FIELD} must list at least two distinct non-empty strings")
        return Call("choice_probs", request, tuple(options))
    if body.get("logprobs"):
        raise BadRequest(f"unsupported: this server returns logprobs only over the options named in {OPTIONS_FIELD}")
    return Call("generate", request)


def _turns(messages: list[Any], limits: ServeLimits) -> tuple[list[dict[str, Any]], list[Any]]:
    turns, images = [], []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise BadRequest(f"message {i} needs role system, user or assistant")
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text":
                    if not isinstance(part.get("text"), str):
                        raise BadRequest(f"message {i}: a text part needs a string `text`")
                    parts.append({"type": "text", "text": part["text"]})
                elif kind == "image_url":
                    images.append(_decode_image(part.get("image_url"), len(images), limits.max_image_pixels))
                    parts.append({"type": "image"})
                else:
                    raise BadRequest(f"message {i}: unsupported content part {kind!r} (text and image_url only)")
            content = parts
        elif not isinstance(content, str):
            raise BadRequest(f"message {i}: content must be a string or a list of parts")
        turns.append({"role": message["role"], "content": content})
    return turns, images


def _check_prompt_tokens(turns: list[dict[str, Any]], prefix: str, limits: ServeLimits,
                         count_tokens: Callable[[str], int] | None) -> None:
    """BadRequest when the prompt text is over `limits.max_prompt_tokens`. Text no longer in
    UTF-8 bytes than the cap is within it for any byte-level tokenizer, so only longer text is
    tokenized; text over 64 bytes per allowed token is refused without tokenizing."""
    texts = [prefix]
    for turn in turns:
        content = turn["content"]
        texts.extend([content] if isinstance(content, str) else [p["text"] for p in content if p["type"] == "text"])
    text = "\n".join(texts)
    size = len(text.encode("utf-8"))
    cap = limits.max_prompt_tokens
    if size <= cap:
        return
    n = size if count_tokens is None or size > 64 * cap else count_tokens(text)
    if n > cap:
        raise BadRequest(f"the prompt has {n} tokens, over this server's limit of {cap}")


def _decode_image(image_url: Any, index: int, max_pixels: int) -> Any:
    try:
        raw = data_url_bytes(image_url)
    except ValueError as exc:
        raise BadRequest(f"image {index}: {exc}") from exc
    try:
        return to_pil(raw, index=index, max_pixels=max_pixels)
    except ImageInputError as exc:
        raise BadRequest(str(exc)) from exc


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise BadRequest(f"{where} must be text")


def _decoding(body: dict[str, Any], limits: ServeLimits) -> Decoding:
    """Greedy unless the body sets a temperature: a judge server, not a chat server. A
    choice_probs body may carry the caller's own decoding in the extension field. A
    max_tokens over `limits.max_tokens` is lowered to it (capped, not refused)."""
    if body.get(OPTIONS_FIELD) is not None and body.get(DECODING_FIELD) is not None:
        if not isinstance(body[DECODING_FIELD], dict):
            raise BadRequest(f"{DECODING_FIELD} must be an object")
        body = {**body[DECODING_FIELD], "max_tokens": body[DECODING_FIELD].get("max_new_tokens")}
    name, max_tokens = next(((k, body[k]) for k in ("max_completion_tokens", "max_tokens")
                             if body.get(k) is not None), ("max_tokens", Decoding.max_new_tokens))
    max_tokens = _integer(max_tokens, name, low=1)
    temperature = _number(body.get("temperature"), "temperature", 0.0)
    top_p = _number(body.get("top_p"), "top_p", 1.0)
    seed = body.get("seed")
    if seed is not None:
        seed = _integer(seed, "seed", low=-2**63, high=2**64 - 1)
    try:
        return Decoding(max_new_tokens=min(max_tokens, limits.max_tokens), temperature=temperature, top_p=top_p,
                        seed=seed, stop=_stops(body.get("stop"), limits.max_stop))
    except ValueError as exc:
        raise BadRequest(f"bad decoding parameters: {exc}") from exc


def _integer(value: Any, name: str, low: int, high: int | None = None) -> int:
    """An integer field (an integral float like 8.0 counts); BadRequest otherwise."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer, got {_preview(value)}")
    if value < low or (high is not None and value > high):
        raise BadRequest(f"{name} must be {'in ' + str([low, high]) if high is not None else '>= ' + str(low)}, "
                         f"got {value}")
    return value


def _number(value: Any, name: str, default: float) -> float:
    """A finite number field, `default` when absent; BadRequest otherwise."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadRequest(f"{name} must be a finite number, got {_preview(value)}")
    return float(value)


def _stops(stop: Any, most: int) -> tuple[str, ...]:
    """`stop` as a tuple: a string or a list of at most `most` non-empty strings."""
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops) or len(stops) > most:
        raise BadRequest(f"stop must be a non-empty string or a list of at most {most} of them, "
                         f"got {_preview(stop)}")
    return tuple(stops)


def _preview(value: Any) -> str:
    """A short repr of a field's value, for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _constraint(body: dict[str, Any]) -> Constraint | None:
    found: list[Constraint] = []
    rf = body.get("response_format")
    if rf is not None and not isinstance(rf, dict):
        raise BadRequest("response_format must be an object")
    if isinstance(rf, dict) and rf.get("type") not in (None, "text"):
        if rf["type"] == "json_schema":
            spec = rf.get("json_schema")
            if not isinstance(spec, dict):
                raise BadRequest("response_format.json_schema must be an object with a `schema`")
            found.append(_schema_constraint(spec.get("schema"), "response_format.json_schema.schema"))
        elif rf["type"] == "json_object":
            found.append(Constraint.json_schema({"type": "object"}))
        else:
            raise BadRequest(f"unsupported response_format type {rf['type']!r}")
    structured = body.get("structured_outputs")
    if structured is not None and not isinstance(structured, dict):
        raise BadRequest("structured_outputs must be an object")
    if isinstance(structured, dict):
        unknown = set(structured) - {"grammar", "json"}
        if unknown:
            raise BadRequest(f"unsupported structured_outputs fields {sorted(unknown)} (grammar and json only)")
        if "grammar" in structured:
            found.append(_ebnf(structured["grammar"]))
        if "json" in structured:
            found.append(_schema_constraint(structured["json"], "structured_outputs.json"))
    for name in GRAMMAR_FIELDS[1:]:  # the flat fields; structured_outputs is read above
        if body.get(name) is not None:
            found.append(_ebnf(body[name]))
    if body.get("guided_json") is not None:
        found.append(_schema_constraint(body["guided_json"], "guided_json"))
    if len(found) > 1:
        raise BadRequest("give one output constraint, not several")
    first = body.get(FIRST_OPTIONS_FIELD)
    if first is None:
        return found[0] if found else None
    if not found:
        raise BadRequest(f"{FIRST_OPTIONS_FIELD} restricts the first token of a constrained answer: "
                         "send it with a grammar or a JSON schema")
    if not isinstance(first, list) or not first or not all(isinstance(o, str) and o for o in first):
        raise BadRequest(f"{FIRST_OPTIONS_FIELD} must be a non-empty list of strings")
    return Constraint(found[0].kind, found[0].spec, tuple(first))


def _schema_constraint(schema: Any, where: str) -> Constraint:
    if isinstance(schema, str):
        try:
            schema = decode_json(schema.encode("utf-8"))
        except BadRequest as exc:
            raise BadRequest(f"{where}: {exc}") from exc
    if not isinstance(schema, dict):
        raise BadRequest(f"{where} must be a JSON schema object")
    return Constraint.json_schema(schema)


def _ebnf(grammar: Any) -> Constraint:
    if not isinstance(grammar, str) or not grammar.strip():
        raise BadRequest("the EBNF grammar must be a non-empty string")
    return Constraint.ebnf(grammar)
