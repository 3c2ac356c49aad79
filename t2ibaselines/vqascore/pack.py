"""VQAScore's prompt pack: the question, the answer word it scores, and how the turn is framed.

The default (`packs/default-v1.json`) is VQAScore's own question with no system prompt and no
assistant prefix, as t2v_metrics asks chat models. A user's dict or JSON file is laid over it
(`vlmjudge.packs.resolve_pack`), so a changed question is recorded as a new pack version.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from vlmjudge.packs import PackModel, resolve_pack

DEFAULT_PACK = "default-v1"
#: Where the prompt goes in the question.
PLACEHOLDER = "{prompt}"


class VQAScorePack(PackModel):
    """The question (with `{prompt}`), the word whose probability is the score (`answer`), the
    other option asked beside it (`contrast`), an optional system prompt and assistant prefix.

    Examples:
        >>> pack = load_pack()
        >>> pack.ask("a red cup")
        'Does this figure show "a red cup"? Please answer yes or no.'
        >>> pack.answer, pack.contrast, pack.system, pack.prefix
        ('Yes', 'No', '', '')
        >>> load_pack({"question": "Is this {prompt}?"}).version.startswith("default-v1+")
        True
        >>> load_pack({"question": "Is this right?"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for VQAScorePack
        ...
    """

    question: str = Field(min_length=1)
    system: str = ""
    prefix: str = ""
    answer: str = Field(min_length=1)
    contrast: str = Field(min_length=1)

    @model_validator(mode="after")
    def _checks(self) -> "VQAScorePack":
        if PLACEHOLDER not in self.question:
            raise ValueError(f"the question lacks the {PLACEHOLDER} placeholder")
        if self.answer == self.contrast or not self.answer.strip() or not self.contrast.strip():
            raise ValueError(f"answer and contrast must be two distinct words, got {self.answer!r}, {self.contrast!r}")
        return self

    @property
    def options(self) -> list[str]:
        """The options asked: the scored answer first, then its contrast."""
        return [self.answer, self.contrast]

    def ask(self, prompt: str) -> str:
        """The question for `prompt` (placed as is: braces in a prompt are text, not fields)."""
        return self.question.replace(PLACEHOLDER, prompt)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    return {**base, **over}


def load_pack(pack: VQAScorePack | Mapping[str, Any] | str | os.PathLike | None = None) -> VQAScorePack:
    """The pack to ask with: None (the default), a shipped name, a JSON path, a dict laid over the
    default (recorded as `default-v1+<digest>` unless it names its own version), or a pack as is."""
    return resolve_pack(pack, VQAScorePack, package="t2ibaselines.vqascore", default=DEFAULT_PACK,
                        label="VQAScore", merge=_merge)


__all__ = ["DEFAULT_PACK", "VQAScorePack", "load_pack"]
