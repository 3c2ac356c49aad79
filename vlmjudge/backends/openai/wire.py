"""The OpenAI-compatible chat-completions wire format the openai backend writes.

Why apart from the backend: pure functions, no HTTP, so each body can be checked without a
server. A request body is split into the fields the OpenAI SDK knows (`standard`) and the
extensions vLLM and SGLang read (`extra`, sent as `extra_body`); `SERVERS` names the families
whose fields differ ("openai": hosted APIs, standard fields only). An image part is what the
judge's image store writes (`ImageURLs.part`: a base64 PNG data URL here; `images.ImageStore` a
file URL or a vLLM uuid). Replies are read in `replies`.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...images import image_bytes_digest
from ...requests import Constraint, Request
from ..vllm_first_options import FIRST_OPTIONS_ARG

#: The server families whose request extensions differ (`constraint_fields`); "openai" is a hosted API.
SERVERS = ("vllm", "sglang", "openai")
#: Name of the schema in `response_format` (OpenAI requires one).
SCHEMA_NAME = "vlmjudge_output"


@dataclass
class WireBody:
    """One chat-completion request: the fields of the OpenAI API (`standard`) and the extensions
    vLLM and SGLang read (`extra`); `merged()` is the JSON body sent."""

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

    def part(self, image: Any) -> dict[str, Any]:
        """The chat content part that carries `image`."""
        return {"type": "image_url", "image_url": {"url": self.url(image)}}


def png_data_url(image: Any) -> str:
    """A PIL image as the base64 PNG data URL an `image_url` part carries (lossless).

    Examples:
        >>> from PIL import Image
        >>> url = png_data_url(Image.new("RGB", (2, 2)))
        >>> url.startswith("data:image/png;base64,"), base64.b64decode(url.partition(",")[2])[:4]
        (True, b'\\x89PNG')
    """
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def chat_messages(request: Request, urls: ImageURLs) -> list[dict[str, Any]]:
    """The request's turns in OpenAI form: `{"type": "image"}` parts become the parts `urls`
    writes (`ImageURLs.part`), and a non-empty prefix becomes a final assistant message to continue."""
    images = iter(request.pil_images())
    out: list[dict[str, Any]] = []
    for turn in request.chat():
        content = turn.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image":
                    parts.append(urls.part(next(images)))
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


def generate_body(request: Request, model: str, urls: ImageURLs, server: str) -> WireBody:
    """The body that generates the request's answer: decoding, constraint and prefix, the
    constraint in the fields the `server` family reads (`constraint_fields`)."""
    d = request.decoding
    standard: dict[str, Any] = {"model": model, "messages": chat_messages(request, urls),
                                "max_tokens": d.max_new_tokens, "temperature": d.temperature, "top_p": d.top_p}
    if d.seed is not None:
        standard["seed"] = d.seed
    if d.stop:
        standard["stop"] = list(d.stop)
    extra = _prefix_fields(request)
    if request.constraint is not None:
        fields, extensions = constraint_fields(request.constraint, server)
        standard.update(fields)
        extra.update(extensions)
    return WireBody(standard, extra)


def constraint_fields(c: Constraint, server: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(standard fields, extension fields) that carry a constraint to the `server` family.

    vLLM and SGLang get the grammar the in-process backends compile (`constraint_to_ebnf`: one-line
    JSON, strict bounded strings), so a server writes what they write; vLLM also gets
    `first_options` as words in `vllm_xargs`, which the processor `vlmjudge serve` loads enforces
    (`backends.vllm_first_options`). A hosted API ("openai") gets a JSON schema as `response_format` and
    no grammar (it takes none); `first_options` reaches neither SGLang nor a hosted API.
    """
    from ...grammar import constraint_to_ebnf, server_json_schema
    if server == "openai":
        if c.kind != "json_schema":
            raise ValueError(f"a hosted OpenAI-compatible API takes no {c.kind} grammar, only a JSON schema")
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": SCHEMA_NAME, "schema": server_json_schema(c), "strict": True}}}, {}
    extensions = grammar_extension(constraint_to_ebnf(c), server)
    if server == "vllm" and c.first_options:
        extensions["vllm_xargs"] = {FIRST_OPTIONS_ARG: list(c.first_options)}
    return {}, extensions


def first_options_probe(model: str) -> WireBody:
    """A one-token request naming no option words: a vLLM server that runs the first-options
    processor refuses it (HTTP 400), one without it answers; so the answer says which it is."""
    return WireBody({"model": model, "messages": [{"role": "user", "content": "."}], "max_tokens": 1,
                     "temperature": 0.0}, {"vllm_xargs": {FIRST_OPTIONS_ARG: []}})


def probs_body(request: Request, model: str, urls: ImageURLs, top_logprobs: int) -> WireBody:
    """The body that reads the first answer token's distribution: one greedy token with logprobs."""
    standard = {"model": model, "messages": chat_messages(request, urls), "max_tokens": 1, "temperature": 0.0,
                "logprobs": True, "top_logprobs": top_logprobs}
    return WireBody(standard, _prefix_fields(request))


def fallback_body(probs: WireBody, max_tokens: int) -> WireBody:
    """A short greedy generation, for the same messages as a `probs_body`, whose leading option
    stands in for logprobs the server did not give."""
    standard = {"model": probs.standard["model"], "messages": probs.standard["messages"],
                "max_tokens": max_tokens, "temperature": 0.0}
    return WireBody(standard, dict(probs.extra))


def grammar_extension(grammar: str, server: str) -> dict[str, Any]:
    """An EBNF grammar in the field the server family reads: vLLM (0.11 on) takes
    `structured_outputs={"grammar": ...}` (`ChatCompletionRequest.structured_outputs`, a
    `StructuredOutputsParams`, in vllm/entrypoints/openai/chat_completion/protocol.py); SGLang
    takes a top-level `ebnf` string (`ChatCompletionRequest.ebnf` in
    python/sglang/srt/entrypoints/openai/protocol.py, beside `regex`); a hosted API none.

    Examples:
        >>> grammar_extension('root ::= "a"', "sglang")
        {'ebnf': 'root ::= "a"'}
    """
    if server == "vllm":
        return {"structured_outputs": {"grammar": grammar}}
    if server == "sglang":
        return {"ebnf": grammar}
    if server == "openai":
        raise ValueError("a hosted OpenAI-compatible API takes no EBNF grammar")
    raise ValueError(f"server must be one of {SERVERS}, got {server!r}")


def _prefix_fields(request: Request) -> dict[str, Any]:
    # vLLM / SGLang: continue the final assistant message instead of opening a new turn.
    return {"continue_final_message": True, "add_generation_prompt": False} if request.prefix else {}


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
