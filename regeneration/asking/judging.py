"""MLLM judgements on a 1-5 scale: content consistency of a regeneration with its reference,
perceptual quality of the regeneration, and (baseline) direct text-image consistency.

The paper reports these on [0, 1] without saying how; here a rating s maps to (s - 1) / 4,
so 1 -> 0 and 5 -> 1. A rating that cannot be read is None and counted, never a guess.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.images import to_pil

from . import json_request, run_stage
from ..parsing import ParseFailure
from ..pack import PromptPack, load_pack
from ..schema import Rating
from ..scoring import normalize_rating



@dataclass
class MLLMScores:
    """Content consistency and perceptual quality of one regeneration (ratings 1-5 and normalised).

    Examples:
        >>> scores = MLLMScores(content=4, perceptual=5, content_reason="Same cat, other pose.")
        >>> scores.content_norm, scores.perceptual_norm, MLLMScores.from_json(scores.to_json()) == scores
        (0.75, 1.0, True)
    """

    content: int | None = None
    perceptual: int | None = None
    content_reason: str = ""
    perceptual_reason: str = ""
    failures: list[ParseFailure] = field(default_factory=list)

    @property
    def content_norm(self) -> float | None:
        return normalize_rating(self.content)

    @property
    def perceptual_norm(self) -> float | None:
        return normalize_rating(self.perceptual)

    def to_json(self) -> dict[str, Any]:
        return {"content": self.content, "perceptual": self.perceptual, "content_norm": self.content_norm,
                "perceptual_norm": self.perceptual_norm, "content_reason": self.content_reason,
                "perceptual_reason": self.perceptual_reason, "failures": [f.to_json() for f in self.failures]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MLLMScores:
        return cls(content=data.get("content"), perceptual=data.get("perceptual"),
                   content_reason=data.get("content_reason", ""), perceptual_reason=data.get("perceptual_reason", ""),
                   failures=[ParseFailure(**f) for f in data.get("failures", [])])



def judge_pairs(judge: Any, references: Sequence[Any], generated: Sequence[Any], *, items: Sequence[str] | None = None,
                pack: PromptPack | dict | str | None = None, content: bool = True, perceptual: bool = True,
                round: int = 0, indices: Sequence[int] | None = None, reading: str = "release") -> list[MLLMScores]:
    """Content consistency (reference first, regeneration second) and perceptual quality (the
    regeneration alone: it is a property of that image, and hiding the reference keeps content
    out of it) for many pairs, each criterion one batched stage.

    Examples:
        A replay judge keyed by (stage, item): content reads as 4 (0.75 on [0, 1]); the
        perceptual answer is no JSON, so it is a counted parse failure, never a score:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> judge = ReplayJudge({("content", "cat"): '{"reason": "Same cat, other pose.", "score": 4}',
        ...                      ("perceptual", "cat"): "five stars"}, key_fields=("stage", "item"))
        >>> image = Image.new("RGB", (32, 32), "red")
        >>> [scores] = judge_pairs(judge, [image], [image], items=["cat"])
        >>> scores.content, scores.content_norm, scores.perceptual, [f.stage for f in scores.failures]
        (4, 0.75, None, ['perceptual'])
    """
    pack = load_pack(pack)
    if len(references) != len(generated):
        raise ValueError(f"{len(references)} references but {len(generated)} generated images")
    n = len(generated)
    items = [str(i) for i in (items if items is not None else range(n))]
    indices = list(indices) if indices is not None else [0] * n
    if len(items) != n or len(indices) != n:
        raise ValueError("items and indices must have one entry per pair")
    gens = [to_pil(img, index=i) for i, img in enumerate(generated)]
    out = [MLLMScores() for _ in range(n)]
    if content:
        refs = [to_pil(img, index=i) for i, img in enumerate(references)]
        asks = [json_request(stage="content", item=it, round=round, index=k, images=[r, g], system=pack.system,
                             text=pack.render("content"), schema=Rating)
                for it, k, r, g in zip(items, indices, refs, gens)]
        for record, got in zip(out, run_stage(judge, asks, Rating, reading=reading)):
            if isinstance(got, ParseFailure):
                record.failures.append(got)
            else:
                record.content, record.content_reason = got.score, got.reason
    if perceptual:
        asks = [json_request(stage="perceptual", item=it, round=round, index=k, images=[g], system=pack.system,
                             text=pack.render("perceptual"), schema=Rating)
                for it, k, g in zip(items, indices, gens)]
        for record, got in zip(out, run_stage(judge, asks, Rating, reading=reading)):
            if isinstance(got, ParseFailure):
                record.failures.append(got)
            else:
                record.perceptual, record.perceptual_reason = got.score, got.reason
    return out


def judge_text_image(judge: Any, images: Sequence[Any], prompts: Sequence[str], *,
                     items: Sequence[str] | None = None,
                     pack: PromptPack | dict | str | None = None,
                     reading: str = "release") -> list[tuple[int | None, ParseFailure | None]]:
    """Baseline (c): rate each image against its text prompt directly, with no regeneration.

    Returns (rating 1-5 or None, the parse failure or None) per image.

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> judge = ReplayJudge({("text_image", "0"): '{"reason": "A red square, not a cat.", "score": 1}'},
        ...                     key_fields=("stage", "item"))
        >>> judge_text_image(judge, [Image.new("RGB", (32, 32), "red")], ["a cat"])
        [(1, None)]
    """
    pack = load_pack(pack)
    if len(images) != len(prompts):
        raise ValueError(f"{len(images)} images but {len(prompts)} prompts")
    items = [str(i) for i in (items if items is not None else range(len(images)))]
    asks = [json_request(stage="text_image", item=it, images=[to_pil(img, index=i)], system=pack.system,
                         text=pack.render("text_image", prompt=p), schema=Rating)
            for i, (it, img, p) in enumerate(zip(items, images, prompts))]
    return [(None, got) if isinstance(got, ParseFailure) else (got.score, None)
            for got in run_stage(judge, asks, Rating, reading=reading)]
