"""What a method asks a judge (`Request`) and what comes back (`Answer`).

One request type for every backend, as vLLM's `SamplingParams` + prompt: images, the
user text or full chat messages, decoding parameters, an optional output constraint
and an optional assistant prefix. The content hash keys the response cache and the
replay backend, so it covers everything that changes the answer and nothing else.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

FinishReason = Literal["stop", "length", "error"]


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; greedy by default so that judgements are reproducible.

    Args:
        max_new_tokens: the answer's token budget.
        temperature: 0 decodes greedily; above 0 samples.
        top_p: nucleus sampling's probability mass, in (0, 1].
        seed: the sampling seed (a sampled answer repeats with the same seed).
        stop: strings that end the answer.

    Examples:
        Greedy by default, so a judgement is reproducible:

        >>> Decoding().greedy, Decoding(temperature=0.7).greedy
        (True, False)
        >>> Decoding(max_new_tokens=8).to_json()
        {'max_new_tokens': 8, 'temperature': 0.0, 'top_p': 1.0, 'seed': None, 'stop': []}
        >>> Decoding(top_p=0)
        Traceback (most recent call last):
        ...
        ValueError: top_p must be in (0, 1], got 0
    """

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_json(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed, "stop": list(self.stop)}


@dataclass(frozen=True)
class Constraint:
    """An output format a backend enforces while decoding: a JSON schema or an EBNF grammar.

    `first_options` additionally restricts the first answer position to the token ids of
    these single-token words (the grammar must accept each of them as the answer's start),
    so constrained greedy decoding picks the same option as the argmax of `choice_probs`.
    Servers that do not know this extension apply the grammar alone.

    Args:
        kind: "json_schema" or "ebnf"; `Constraint.json_schema` and `Constraint.ebnf` build one.
        spec: the schema as JSON text, or the grammar.
        first_options: the single-token words the answer's first position is restricted to.

    Examples:
        >>> c = Constraint.json_schema({"type": "object", "properties": {"answer": {"enum": ["Yes", "No"]}}},
        ...                            first_options=["Yes", "No"])
        >>> c.kind, c.first_options, c.schema["properties"]["answer"]
        ('json_schema', ('Yes', 'No'), {'enum': ['Yes', 'No']})
        >>> Constraint.ebnf('root ::= "Yes" | "No"').kind
        'ebnf'
    """

    kind: Literal["json_schema", "ebnf"]
    spec: str
    first_options: tuple[str, ...] | None = None

    @classmethod
    def json_schema(cls, schema: dict | type, first_options: Sequence[str] | None = None) -> "Constraint":
        """From a JSON-schema dict or a pydantic model class.

        Examples:
            A pydantic model class gives its JSON schema:

            >>> from pydantic import BaseModel
            >>> class Verdict(BaseModel):
            ...     answer: str
            >>> Constraint.json_schema(Verdict).schema["required"]
            ['answer']
        """
        if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        if not isinstance(schema, dict):
            raise TypeError(f"json_schema needs a dict or a pydantic model, got {type(schema).__name__}")
        # Key order is kept: a grammar emits properties in schema order (rationale before answer).
        return cls("json_schema", json.dumps(schema),
                   tuple(first_options) if first_options else None)

    @classmethod
    def ebnf(cls, grammar: str, first_options: Sequence[str] | None = None) -> "Constraint":
        if not grammar.strip():
            raise ValueError("empty EBNF grammar")
        return cls("ebnf", grammar, tuple(first_options) if first_options else None)

    @property
    def schema(self) -> dict:
        if self.kind != "json_schema":
            raise ValueError("only a json_schema constraint has a schema")
        return json.loads(self.spec)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.spec,
                "first_options": list(self.first_options) if self.first_options else None}


@dataclass
class Request:
    """One question to a judge.

    Args:
        images: the request's images (paths, PIL images, arrays, tensors: `vlmjudge.to_pil`).
        text: one user turn: the images, then this text. Give `text` or `messages`, not both.
        messages: chat turns in the transformers format, `{"type": "image"}` parts standing
            for `images` in order.
        system: the system prompt.
        decoding: how the answer is decoded (greedy by default).
        constraint: an output format the backend enforces while decoding.
        prefix: put at the start of the assistant's answer (for example "Answer:"), so the
            first generated token is the decision.
        meta: free (item id, question id, stage), and not hashed.

    Examples:
        A text request puts the images first, then the text, in one user turn:

        >>> from PIL import Image
        >>> request = Request(images=[Image.new("RGB", (8, 8), "red")], text="Is the image red?",
        ...                   system="Answer Yes or No.", prefix="Answer:")
        >>> [turn["role"] for turn in request.chat()]
        ['system', 'user']
        >>> [part["type"] for part in request.chat()[1]["content"]]
        ['image', 'text']

        The content hash covers pixels, text and decoding, but not `meta`:

        >>> same = Request(images=[Image.new("RGB", (8, 8), "red")], text="Is the image red?",
        ...                system="Answer Yes or No.", prefix="Answer:", meta={"id": 3})
        >>> same.content_hash() == request.content_hash()
        True
        >>> blue = Request(images=[Image.new("RGB", (8, 8), "blue")], text="Is the image red?",
        ...                system="Answer Yes or No.", prefix="Answer:")
        >>> blue.content_hash() == request.content_hash()
        False
        >>> Request(text="hi", messages=[])
        Traceback (most recent call last):
        ...
        ValueError: a Request needs exactly one of text= or messages=
    """

    images: list[Any] = field(default_factory=list)
    text: str | None = None
    messages: list[dict[str, Any]] | None = None
    system: str | None = None
    decoding: Decoding = field(default_factory=Decoding)
    constraint: Constraint | None = None
    prefix: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    _pil: list | None = field(default=None, init=False, repr=False, compare=False)
    _hash: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.text is None) == (self.messages is None):
            raise ValueError("a Request needs exactly one of text= or messages=")
        if not isinstance(self.images, list):
            self.images = list(self.images)
        if self.messages is not None:
            placeholders = sum(1 for m in self.messages for part in _parts(m) if part.get("type") == "image")
            if placeholders != len(self.images):
                raise ValueError(f"messages have {placeholders} image placeholders but {len(self.images)} images")

    def pil_images(self) -> list:
        """The images as RGB PIL, converted once (errors name the image's index)."""
        if self._pil is None:
            from .images import to_pil
            self._pil = [to_pil(img, index=i) for i, img in enumerate(self.images)]
        return self._pil

    def chat(self) -> list[dict[str, Any]]:
        """Chat messages (system first, if any) with `{"type": "image"}` placeholders."""
        if self.messages is not None:
            turns = [dict(m) for m in self.messages]
        else:
            content = [{"type": "image"} for _ in self.images] + [{"type": "text", "text": self.text}]
            turns = [{"role": "user", "content": content}]
        if self.system:
            turns.insert(0, {"role": "system", "content": [{"type": "text", "text": self.system}]})
        return turns

    def content_hash(self) -> str:
        """A stable sha256 of image pixels, text, decoding, constraint and prefix (not meta)."""
        if self._hash is None:
            payload = {
                "images": _image_digests(self.pil_images()) if self.images else [],
                "chat": _text_only(self.chat()),
                "decoding": self.decoding.to_json(),
                "constraint": self.constraint.to_json() if self.constraint else None,
                "prefix": self.prefix,
            }
            blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
            self._hash = hashlib.sha256(blob).hexdigest()
        return self._hash


@dataclass
class Answer:
    """A judge's answer: `finish_reason` is "length" when the token budget ran out and
    "error" when the backend failed for this request (the text is then empty).

    Examples:
        >>> answer = Answer("Yes", num_tokens=1)
        >>> answer.ok, answer.to_json()
        (True, {'text': 'Yes', 'finish_reason': 'stop', 'num_tokens': 1})
        >>> Answer.from_json({"text": "", "finish_reason": "error"}).ok
        False
    """

    text: str
    finish_reason: FinishReason = "stop"
    num_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.finish_reason != "error"

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "finish_reason": self.finish_reason, "num_tokens": self.num_tokens}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Answer":
        return cls(text=data["text"], finish_reason=data.get("finish_reason", "stop"),
                   num_tokens=int(data.get("num_tokens", 0)))


def _image_digests(images: list) -> list[str]:
    from .images import image_bytes_digest
    return [image_bytes_digest(img) for img in images]


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _text_only(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages reduced to JSON-able text: image objects inside parts are replaced by a marker."""
    out = []
    for turn in turns:
        content = turn.get("content")
        if isinstance(content, list):
            content = [{"type": "image"} if p.get("type") == "image" else
                       {k: v for k, v in p.items() if isinstance(v, (str, int, float, bool))} for p in content]
        out.append({"role": turn.get("role"), "content": content})
    return out
