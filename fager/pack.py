"""Prompt packs: every text the FAGER agents send to a judge, and the bounds on what comes back.

A pack is JSON shipped in `fager/packs/` (the default is `default-v1`). A user pack (a
path, a dict or a `PromptPack`) is laid over the default agent by agent, so a dict such
as `{"agents": {"evaluation": {"user": "..."}}}` overrides one template and keeps the
rest; the version then records that the pack changed. QA sets are stored per pack
version, so a changed prompt never silently reuses questions built with another one.

Each agent has a `system` and a `user` template (placeholders `{name}`), a `max_new_tokens`
budget and decoding `limits`: the longest string and the longest list its JSON may hold.
The limits narrow the pydantic schemas of `fager.schema` before they go to a
grammar-constrained decoder, so an output always closes within the token budget.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vlmjudge.packs import PackModel, deep_merge, resolve_pack

DEFAULT_PACK = "default-v1"
AGENTS: tuple[str, ...] = ("proposal", "extraction", "verification", "qa", "evaluation", "regenerate", "edit")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")

#: Placeholders each agent's user template must contain (it would otherwise lose its input).
REQUIRED_PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "proposal": ("{prompt}",),
    "extraction": ("{prompt}",),
    "verification": ("{prompt}", "{proposal}", "{evidence}"),
    "qa": ("{prompt}", "{facts}"),
    "evaluation": ("{question}",),
    "regenerate": ("{prompt}", "{failed}"),
    "edit": ("{prompt}", "{failed}"),
}


class Limits(BaseModel):
    """Bounds the decoder enforces: characters per string, items per list.

    Examples:
        >>> load_pack().agent("evaluation").limits.string > 0
        True
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    string: int = Field(ge=1)
    items: int = Field(ge=1)


class AgentPrompt(BaseModel):
    """One agent's templates and decoding budget.

    Examples:
        >>> agent = load_pack().agent("evaluation")
        >>> agent.max_new_tokens, sorted(AgentPrompt.model_fields)
        (256, ['limits', 'max_new_tokens', 'system', 'user'])
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    system: str = ""
    user: str = Field(min_length=1)
    max_new_tokens: int = Field(ge=1)
    limits: Limits


class BaselinePrompt(BaseModel):
    """The VQAScore-style baseline: the whole prompt as one yes/no question.

    Examples:
        >>> BaselinePrompt(user="Does this image show {prompt}?").options
        ('Yes', 'No')
        >>> BaselinePrompt(user="Does this image match?")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for BaselinePrompt
        ...
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    system: str = ""
    user: str = Field(min_length=1)
    prefix: str = ""
    options: tuple[str, str] = ("Yes", "No")

    @model_validator(mode="after")
    def _checks(self) -> "BaselinePrompt":
        if "{prompt}" not in self.user:
            raise ValueError("baseline template lacks the {prompt} placeholder")
        if self.options[0] == self.options[1] or not all(o.strip() for o in self.options):
            raise ValueError(f"baseline options must be two distinct words, got {list(self.options)}")
        return self


class PromptPack(PackModel):
    """Every template FAGER asks with, versioned so stored QA sets know what built them.

    Examples:
        The key names the pack in QA-store keys; an override changes only what it names:

        >>> pack = load_pack({"agents": {"evaluation": {"system": "Answer strictly from the image."}}})
        >>> evaluation = pack.agent("evaluation")
        >>> pack.version.startswith("default-v1+"), evaluation.system, evaluation.max_new_tokens
        (True, 'Answer strictly from the image.', 256)
        >>> load_pack().key.startswith("default-v1#"), pack.key == load_pack().key
        (True, False)
        >>> load_pack().user_text("proposal", prompt="a red cup").startswith("Prompt: a red cup")
        True
    """

    agents: dict[str, AgentPrompt]
    baseline: BaselinePrompt

    @model_validator(mode="after")
    def _all_agents(self) -> "PromptPack":
        missing = [a for a in AGENTS if a not in self.agents]
        unknown = sorted(set(self.agents) - set(AGENTS))
        if missing or unknown:
            raise ValueError(f"pack agents: missing {missing}, unknown {unknown}; expected {list(AGENTS)}")
        for name, marks in REQUIRED_PLACEHOLDERS.items():
            lacking = [m for m in marks if m not in self.agents[name].user]
            if lacking:
                raise ValueError(f"pack template {name!r} lacks placeholders {lacking}")
        return self

    @property
    def key(self) -> str:
        """The pack's name in QA-store keys: version plus a short digest of the content."""
        return f"{self.version}#{self.sha256[:12]}"

    def agent(self, name: str) -> AgentPrompt:
        """One agent's prompt, with a clear error for an unknown name."""
        if name not in self.agents:
            raise KeyError(f"no agent {name!r} in pack {self.version}; agents: {list(AGENTS)}")
        return self.agents[name]

    def user_text(self, name: str, **values: str) -> str:
        """The agent's user text with its placeholders filled."""
        return fill(self.agent(name).user, **values)


def fill(template: str, **values: str) -> str:
    """Fill `{name}` placeholders, leaving other braces alone (templates may show JSON).

    Examples:
        >>> fill('Prompt: {prompt} as {"json": true}', prompt="a red cup")
        'Prompt: a red cup as {"json": true}'
    """
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def load_pack(pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None) -> PromptPack:
    """The pack to ask with: None (default), a shipped name, a JSON path, a dict laid over the
    default (its version gets a digest suffix unless it names one), or a PromptPack as is.

    Examples:
        >>> load_pack().version, sorted(load_pack().agents)[:3]
        ('default-v1', ['edit', 'evaluation', 'extraction'])
    """
    return resolve_pack(pack, PromptPack, package="fager", default=DEFAULT_PACK, label="FAGER", merge=deep_merge)


__all__ = ["AGENTS", "DEFAULT_PACK", "AgentPrompt", "BaselinePrompt", "Limits", "PromptPack", "fill", "load_pack"]
