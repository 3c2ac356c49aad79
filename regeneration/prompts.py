"""The prompt pack: every text Image Regeneration sends to a judge, as versioned, overridable data.

The default pack ships as `regeneration/packs/default-v1.json`. `load_pack(pack)` lays a
user's dict (or a JSON file) over it, so overriding one template is one key; the pack's
version and a hash of its content are recorded with every run.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_PACK = "default-v1"

#: Placeholders each template may use (a template using another one is rejected on load).
PLACEHOLDERS: dict[str, set[str]] = {
    "iut_caption": set(), "iut_objects": {"description", "max_objects"},
    "iut_attributes": {"description", "type", "name", "fields"}, "iut_relations": {"names", "max_relations"},
    "initial_prompt": {"iut", "max_words"}, "direct_prompt": {"max_words"},
    "variants": {"prompt", "n", "aspect", "max_words"},
    "feedback": {"prompt", "iut", "aspect"}, "revision": {"prompt", "feedback", "iut", "aspect", "n", "max_words"},
    "content": set(), "perceptual": set(), "text_image": {"prompt"}, "caption": {"max_words"},
}
_FIELD = re.compile(r"\{([a-z_]+)\}")


class PromptPack(BaseModel):
    """Templates (str.format placeholders), aspect descriptions and word limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str = Field(min_length=1)
    description: str = ""
    system: str = ""
    iut_caption: str
    iut_objects: str
    iut_attributes: str
    iut_relations: str
    initial_prompt: str
    direct_prompt: str
    variants: str
    feedback: str
    revision: str
    content: str
    perceptual: str
    text_image: str
    caption: str
    aspects: dict[str, str]
    limits: dict[str, int]

    @model_validator(mode="after")
    def _check_placeholders(self) -> PromptPack:
        for name, allowed in PLACEHOLDERS.items():
            used = set(_FIELD.findall(getattr(self, name)))
            unknown = used - allowed
            if unknown:
                raise ValueError(f"template {name!r} uses unknown placeholders {sorted(unknown)}; allowed: {sorted(allowed)}")
        if not self.aspects:
            raise ValueError("a pack needs at least one aspect description")
        for key in ("max_words", "caption_words"):
            if self.limits.get(key, 0) < 1:
                raise ValueError(f"limits.{key} must be a positive integer")
        return self

    def render(self, template: str, /, **values: Any) -> str:
        """Fill a template; a missing value raises KeyError naming it."""
        if template not in PLACEHOLDERS:
            raise KeyError(f"no template {template!r}")
        return getattr(self, template).format(**values)

    def aspect(self, key: str) -> str:
        """The description of an aspect in the revision queue."""
        if key not in self.aspects:
            raise KeyError(f"unknown aspect {key!r}; the pack defines {sorted(self.aspects)}")
        return self.aspects[key]

    def fingerprint(self) -> str:
        """A short hash of the whole pack, recorded with runs so a changed prompt is visible."""
        blob = json.dumps(self.model_dump(), sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


def _default_data() -> dict[str, Any]:
    text = resources.files("regeneration").joinpath("packs", f"{DEFAULT_PACK}.json").read_text(encoding="utf-8")
    return json.loads(text)


def load_pack(pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None) -> PromptPack:
    """The default pack, or a user's overrides laid over it (a dict, a JSON path or a whole PromptPack).

    An override without its own `version` is recorded as `<default>+custom`.
    """
    if isinstance(pack, PromptPack):
        return pack
    data = _default_data()
    if pack is None:
        return PromptPack.model_validate(data)
    if isinstance(pack, (str, os.PathLike)):
        with open(pack, encoding="utf-8") as fh:
            pack = json.load(fh)
    if not isinstance(pack, Mapping):
        raise TypeError(f"pack must be a PromptPack, a dict or a JSON path, got {type(pack).__name__}")
    overrides = dict(pack)
    for key in ("aspects", "limits"):
        if key in overrides:
            overrides[key] = {**data[key], **overrides[key]}
    merged = {**data, **overrides}
    if "version" not in pack:
        merged["version"] = f"{data['version']}+custom"
    return PromptPack.model_validate(merged)
