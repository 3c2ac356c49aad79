"""Prompt packs shared by the methods: a versioned JSON file shipped in a package, or a
user's name, path or dict laid over it, validated by the method's own pydantic model."""
from __future__ import annotations

import copy
import hashlib
import json
import os
from functools import cached_property
from importlib import resources
from typing import Any, Callable, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field

P = TypeVar("P")


class PackModel(BaseModel):
    """The part every method's prompt pack shares: frozen, no unknown keys, a `version` and a
    `description` first, and `sha256`, the digest of the whole pack (equal digests asked
    exactly the same things), which results record beside the version.

    Examples:
        >>> class Pack(PackModel):
        ...     ask: str
        >>> pack = Pack(version="toy-1", ask="Is it red?")
        >>> pack.sha256 == hashlib.sha256(b'{"ask": "Is it red?", "description": "", "version": "toy-1"}').hexdigest()
        True
        >>> from pydantic import ValidationError
        >>> try:
        ...     Pack(version="toy-1", ask="Is it red?", colour="red")
        ... except ValidationError as error:
        ...     print(error.errors()[0]["type"], error.errors()[0]["loc"])
        extra_forbidden ('colour',)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str = Field(min_length=1)
    description: str = ""

    @cached_property
    def sha256(self) -> str:
        """The digest of the pack's JSON, keys sorted: equal digests asked the same things."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


def shipped_pack(package: str, name: str, label: str) -> dict[str, Any]:
    """The JSON of `<package>/packs/<name>.json`.

    Examples:
        A package shipping `packs/default.json` (a throwaway one here):

        >>> from vlmjudge.testing.examples import ExamplePackage
        >>> package = ExamplePackage("example_pack_a", default={"version": "toy-1", "ask": "Is it red?"})
        >>> with package as name:
        ...     shipped_pack(name, "default", "toy")
        {'version': 'toy-1', 'ask': 'Is it red?'}
        >>> with package as name:
        ...     shipped_pack(name, "other", "toy")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no shipped toy pack 'other'
    """
    path = resources.files(package).joinpath("packs", f"{name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no shipped {label} pack {name!r}")
    return json.loads(path.read_text(encoding="utf-8"))


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`: a dict laid on a dict key by key, all the way down, anything else replaced
    (copies, so neither input changes).

    Examples:
        >>> deep_merge({"agents": {"a": 1, "b": 2}, "n": 3}, {"agents": {"b": 5}, "n": [4]})
        {'agents': {'a': 1, 'b': 5}, 'n': [4]}
    """
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_pack(pack: Any, model: type[P], *, package: str, default: str, label: str,
                 merge: Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]]) -> P:
    """None (the default pack), a `model` as is, a shipped pack name, a JSON path, or a dict
    merged over the default; a dict without its own `version` is recorded as
    `<default version>+<digest of the overrides>`, so results say what asked them.

    Examples:
        A dict override without its own version is recorded as the default's version plus a
        digest of the changes:

        >>> from pydantic import BaseModel
        >>> from vlmjudge.testing.examples import ExamplePackage
        >>> class Pack(BaseModel):
        ...     version: str
        ...     ask: str
        >>> def merge(base, override):
        ...     return {**base, **override}
        >>> options = dict(package="example_pack_b", default="default", label="toy", merge=merge)
        >>> with ExamplePackage("example_pack_b", default={"version": "toy-1", "ask": "Is it red?"}):
        ...     default = resolve_pack(None, Pack, **options)
        ...     custom = resolve_pack({"ask": "Is it blue?"}, Pack, **options)
        ...     again = resolve_pack({"ask": "Is it blue?"}, Pack, **options)
        >>> default
        Pack(version='toy-1', ask='Is it red?')
        >>> custom.ask, custom.version.startswith("toy-1+"), len(custom.version), again == custom
        ('Is it blue?', True, 14, True)
    """
    if pack is None:
        return model.model_validate(shipped_pack(package, default, label))
    if isinstance(pack, model):
        return pack
    if isinstance(pack, (str, os.PathLike)):
        text = os.fspath(pack)
        if not os.path.exists(text) and text == os.path.basename(text) and not text.endswith(".json"):
            return model.model_validate(shipped_pack(package, text, label))
        with open(text, encoding="utf-8") as handle:
            try:
                pack = json.load(handle)
            except json.JSONDecodeError as error:
                raise ValueError(f"{label} pack {text!r} is not valid JSON: {error}") from error
    if not isinstance(pack, Mapping):
        raise TypeError(f"pack must be None, a name, a path, a dict or a PromptPack, got {type(pack).__name__}")
    base = shipped_pack(package, default, label)
    merged = merge(base, pack)
    if "version" not in pack:
        changes = json.dumps(dict(pack), sort_keys=True, ensure_ascii=False, default=str)
        merged["version"] = f"{base['version']}+{hashlib.sha256(changes.encode()).hexdigest()[:8]}"
    return model.model_validate(merged)
