"""Chat-completion request bodies to judge calls, and judge results to response bodies.

The inverse of `vlmjudge.backends._openai_wire`: a body sent by the OpenAI-compatible
backend (or any OpenAI client) becomes the same `Request` the caller built, so a judge
behind `vlmjudge serve` answers exactly what it would answer in-process.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from .backends._openai_wire import DECODING_FIELD, FIRST_OPTIONS_FIELD, OPTIONS_FIELD
from .images import ImageInputError, to_pil
from .requests import Answer, Constraint, Decoding, Request


class BadRequest(ValueError):
    """A body this server cannot answer: HTTP 400 with the message."""


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


def parse_chat_body(body: Any) -> Call:
    """The judge call a chat-completions body asks for; BadRequest says what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
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
    turns, images = _turns(messages)
    try:
        request = Request(images=images, messages=turns, decoding=_decoding(body), constraint=_constraint(body),
                          prefix=prefix)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    options = body.get(OPTIONS_FIELD)
    if options is not None:
        if (not isinstance(options, list) or len(options) < 2 or len(set(options)) != len(options)
                or not all(isinstance(o, str) and o for o in options)):
            raise BadRequest(f"{OPTIONS_FIELD} must list at least two distinct non-empty strings")
        return Call("choice_probs", request, tuple(options))
    if body.get("logprobs"):
        raise BadRequest(f"unsupported: this server returns logprobs only over the options named in {OPTIONS_FIELD}")
    return Call("generate", request)


def _turns(messages: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
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
                    parts.append({"type": "text", "text": str(part.get("text", ""))})
                elif kind == "image_url":
                    images.append(_decode_image(part.get("image_url"), len(images)))
                    parts.append({"type": "image"})
                else:
                    raise BadRequest(f"message {i}: unsupported content part {kind!r} (text and image_url only)")
            content = parts
        elif not isinstance(content, str):
            raise BadRequest(f"message {i}: content must be a string or a list of parts")
        turns.append({"role": message["role"], "content": content})
    return turns, images


def _decode_image(image_url: Any, index: int) -> Any:
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str) or not url.startswith("data:"):
        raise BadRequest(f"image {index}: only base64 data URLs are accepted (this server fetches nothing)")
    header, _, data = url.partition(",")
    if not header.endswith(";base64"):
        raise BadRequest(f"image {index}: the data URL must be base64-encoded")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"image {index}: bad base64 ({exc})") from exc
    try:
        return to_pil(raw, index=index)
    except ImageInputError as exc:
        raise BadRequest(str(exc)) from exc


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise BadRequest(f"{where} must be text")


def _decoding(body: dict[str, Any]) -> Decoding:
    """Greedy unless the body sets a temperature: a judge server, not a chat server. A
    choice_probs body may carry the caller's own decoding in the extension field."""
    if body.get(OPTIONS_FIELD) is not None and isinstance(body.get(DECODING_FIELD), dict):
        body = {**body[DECODING_FIELD], "max_tokens": body[DECODING_FIELD].get("max_new_tokens")}
    max_tokens = next((body[k] for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None),
                      Decoding.max_new_tokens)
    stop = body.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else tuple(stop)
    temperature = body.get("temperature")
    top_p = body.get("top_p")
    try:
        return Decoding(max_new_tokens=int(max_tokens), temperature=float(0.0 if temperature is None else temperature),
                        top_p=float(1.0 if top_p is None else top_p), seed=body.get("seed"), stop=stop)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"bad decoding parameters: {exc}") from exc


def _constraint(body: dict[str, Any]) -> Constraint | None:
    found: list[Constraint] = []
    rf = body.get("response_format")
    if isinstance(rf, dict) and rf.get("type") not in (None, "text"):
        if rf["type"] == "json_schema":
            schema = (rf.get("json_schema") or {}).get("schema")
            found.append(_schema_constraint(schema, "response_format.json_schema.schema"))
        elif rf["type"] == "json_object":
            found.append(Constraint.json_schema({"type": "object"}))
        else:
            raise BadRequest(f"unsupported response_format type {rf['type']!r}")
    structured = body.get("structured_outputs")
    if isinstance(structured, dict):
        unknown = set(structured) - {"grammar", "json"}
        if unknown:
            raise BadRequest(f"unsupported structured_outputs fields {sorted(unknown)} (grammar and json only)")
        if "grammar" in structured:
            found.append(_ebnf(structured["grammar"]))
        if "json" in structured:
            found.append(_schema_constraint(structured["json"], "structured_outputs.json"))
    for name in ("guided_grammar", "ebnf"):
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
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise BadRequest(f"{where} is not JSON: {exc}") from exc
    if not isinstance(schema, dict):
        raise BadRequest(f"{where} must be a JSON schema object")
    return Constraint.json_schema(schema)


def _ebnf(grammar: Any) -> Constraint:
    if not isinstance(grammar, str) or not grammar.strip():
        raise BadRequest("the EBNF grammar must be a non-empty string")
    return Constraint.ebnf(grammar)


def completion_body(model: str, answer: Answer) -> dict[str, Any]:
    """A chat.completion object for a generated answer."""
    return _envelope(model, {"role": "assistant", "content": answer.text}, answer.finish_reason, None,
                     answer.num_tokens)


def probs_body(model: str, probs: dict[str, float]) -> dict[str, Any]:
    """A one-token chat.completion whose first token's top_logprobs are the options (those with
    non-zero probability, most likely first), the options' probabilities normalised over them."""
    ranked = sorted(((o, p) for o, p in probs.items() if p > 0), key=lambda x: -x[1])
    if not ranked:
        raise ValueError("choice probabilities with no mass")
    top = [{"token": o, "logprob": math.log(p), "bytes": list(o.encode("utf-8"))} for o, p in ranked]
    logprobs = {"content": [{**top[0], "top_logprobs": top}]}
    return _envelope(model, {"role": "assistant", "content": ranked[0][0]}, "length", logprobs, 1)


def _envelope(model: str, message: dict[str, Any], finish: str, logprobs: Any, tokens: int) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}}


def error_body(message: str, kind: str, status: int) -> dict[str, Any]:
    """The OpenAI error envelope."""
    return {"error": {"message": message, "type": kind, "code": status}}
