"""TIFA's prompt pack: how a question is asked of the image, how the judge writes questions for a
prompt the QA file lacks, and how those questions are checked against the prompt alone.

The default ships as `packs/default-v1.json`; a user's dict or JSON file is laid over it
(`vlmjudge.packs.resolve_pack`), and the pack's version and digest go into every run's manifest.
Templates name their values as `{question}`, `{choices}`, `{prompt}`, ...; `fill` replaces each
once, so braces inside a prompt or a question stay text.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vlmjudge.packs import PackModel, deep_merge, resolve_pack

DEFAULT_PACK = "default-v1"
_FIELD = re.compile(r"\{([a-z_]+)\}")
#: The values each template must use.
REQUIRED = {"answer": ("question", "choices"), "verify": ("prompt", "question", "choices"),
            "generate": ("prompt", "types", "max_questions", "max_choices")}


def fill(template: str, **values: Any) -> str:
    """`template` with each `{name}` among `values` replaced, in one pass.

    Examples:
        >>> fill("Q: {question} ({kept})", question="is {this} red?")
        'Q: is {this} red? ({kept})'
    """
    return _FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


class AskPrompt(BaseModel):
    """One multiple-choice request: system prompt, user text and the assistant prefix the letter follows."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    system: str = ""
    user: str = Field(min_length=1)
    prefix: str = ""


class GeneratePrompt(BaseModel):
    """The question-writing request, with the bounds its JSON answer is held to."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    system: str = ""
    user: str = Field(min_length=1)
    max_new_tokens: int = Field(ge=16)
    max_questions: int = Field(ge=1, le=64)
    max_choices: int = Field(ge=2)
    max_chars: int = Field(ge=8, le=400)


class TifaPack(PackModel):
    """Everything TIFA asks with.

    Examples:
        >>> pack = load_pack()
        >>> pack.letters, pack.shuffle_choices
        ('ABCDEFGH', True)
        >>> print(pack.choice_lines(["surfer", "swimmer"]))
        A. surfer
        B. swimmer
        >>> load_pack({"letters": "AAB"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for TifaPack
        ...
    """

    answer: AskPrompt
    verify: AskPrompt
    generate: GeneratePrompt
    letters: str = Field(min_length=2)
    choice_line: str = Field(min_length=1)
    shuffle_choices: bool = True

    @model_validator(mode="after")
    def _checks(self) -> "TifaPack":
        for name, needed in REQUIRED.items():
            lacking = [f"{{{value}}}" for value in needed if f"{{{value}}}" not in getattr(self, name).user]
            if lacking:
                raise ValueError(f"the {name} template lacks {', '.join(lacking)}")
        if len(set(self.letters)) != len(self.letters) or not all(c.isalnum() for c in self.letters):
            raise ValueError(f"letters must be distinct letters or digits, got {self.letters!r}")
        if "{letter}" not in self.choice_line or "{choice}" not in self.choice_line:
            raise ValueError("choice_line must hold {letter} and {choice}")
        if self.generate.max_choices > len(self.letters):
            raise ValueError(f"generate.max_choices {self.generate.max_choices} is more than the "
                             f"{len(self.letters)} letters")
        return self

    def choice_lines(self, choices: Sequence[str]) -> str:
        """The choices as lettered lines, in the order given; a ValueError past the last letter."""
        if len(choices) > len(self.letters):
            raise ValueError(f"{len(choices)} choices but only {len(self.letters)} letters ({self.letters})")
        return "\n".join(fill(self.choice_line, letter=letter, choice=choice)
                         for letter, choice in zip(self.letters, choices))

    def shown_order(self, question: str, choices: Sequence[str]) -> list[int]:
        """The order the choices are shown in: as given, or (`shuffle_choices`) a fixed permutation
        drawn from a digest of the question and its choices, so the expected answer, written first
        in TIFA's questions, is not always the first letter; the same question is always shown alike.

        Examples:
            >>> load_pack().shown_order("is this a surfer?", ["yes", "no"]) in ([0, 1], [1, 0])
            True
            >>> load_pack({"shuffle_choices": False}).shown_order("q", ["a", "b", "c"])
            [0, 1, 2]
        """
        order = list(range(len(choices)))
        if not self.shuffle_choices:
            return order
        seed = hashlib.sha256("\n".join([question, *choices]).encode("utf-8")).digest()
        return sorted(order, key=lambda i: hashlib.sha256(seed + i.to_bytes(2, "big")).digest())


def load_pack(pack: TifaPack | Mapping[str, Any] | str | os.PathLike | None = None) -> TifaPack:
    """The pack to ask with: None (the default), a shipped name, a JSON path, a dict laid over the
    default (recorded as `default-v1+<digest>` unless it names its own version), or a pack as is."""
    return resolve_pack(pack, TifaPack, package="t2ibaselines.tifa", default=DEFAULT_PACK, label="TIFA",
                        merge=deep_merge)


__all__ = ["DEFAULT_PACK", "AskPrompt", "GeneratePrompt", "TifaPack", "fill", "load_pack"]
