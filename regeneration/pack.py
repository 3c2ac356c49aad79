"""The prompt pack: every text Image Regeneration sends to a judge, as versioned, overridable data.

The default pack ships as `regeneration/packs/default-v1.json`. `load_pack(pack)` resolves a pack
as every method does (`vlmjudge.packs.resolve_pack`): a user's dict (or a JSON file) is laid over
the default, so overriding one template is one key, and an override without its own version is
recorded as `default-v1+<digest of the overrides>`; the pack's version and a hash of its content
are recorded with every run.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import model_validator

from vlmjudge.packs import PackModel, resolve_pack

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


class PromptPack(PackModel):
    """Templates (str.format placeholders), aspect descriptions and word limits.

    Examples:
        >>> pack = load_pack()
        >>> pack.render("caption", max_words=20).startswith("Write a short caption of this image")
        True
        >>> pack.render("caption")
        Traceback (most recent call last):
        ...
        KeyError: 'max_words'
        >>> sorted(pack.aspects)[:3], pack.aspect("color") == pack.aspects["color"]
        (['color', 'detail', 'overall'], True)
    """

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
        """A short hash of the whole pack (the first 12 hex digits of `sha256`), recorded with
        runs so a changed prompt is visible."""
        return self.sha256[:12]


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`: `aspects` and `limits` key by key, every other field replaced."""
    merged = {**base, **over}
    for key in ("aspects", "limits"):
        if key in over:
            merged[key] = {**base[key], **over[key]}
    return merged


def load_pack(pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None) -> PromptPack:
    """The pack to ask with: None (the default), a shipped name, a JSON path, a dict laid over the
    default (its version gets a digest of the overrides unless it names one), or a PromptPack as is.

    Examples:
        Limits and aspects are merged key by key; the version and fingerprint show the change:

        >>> shorter = load_pack({"limits": {"max_words": 30}})
        >>> shorter.limits, shorter.version.startswith("default-v1+")
        ({'max_words': 30, 'caption_words': 20}, True)
        >>> shorter.fingerprint() != load_pack().fingerprint()
        True
    """
    return resolve_pack(pack, PromptPack, package="regeneration", default=DEFAULT_PACK, label="Regeneration",
                        merge=_merge)
