"""Prompt packs shared by the methods: a versioned JSON file shipped in a package, or a
user's name, path or dict laid over it, validated by the method's own pydantic model."""
from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from typing import Any, Callable, Mapping, TypeVar

P = TypeVar("P")


def shipped_pack(package: str, name: str, label: str) -> dict[str, Any]:
    """The JSON of `<package>/packs/<name>.json`.

    Examples:
        >>> import json, sys, tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "example_pack_a" / "packs").mkdir(parents=True)
        >>> _ = (root / "example_pack_a" / "__init__.py").write_text("")
        >>> pack = {"version": "toy-1", "ask": "Is it red?"}
        >>> _ = (root / "example_pack_a" / "packs" / "default.json").write_text(json.dumps(pack))
        >>> sys.path.insert(0, str(root))
        >>> shipped_pack("example_pack_a", "default", "toy")
        {'version': 'toy-1', 'ask': 'Is it red?'}
        >>> shipped_pack("example_pack_a", "other", "toy")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no shipped toy pack 'other'
        >>> sys.path.remove(str(root))
    """
    path = resources.files(package).joinpath("packs", f"{name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no shipped {label} pack {name!r}")
    return json.loads(path.read_text(encoding="utf-8"))


def resolve_pack(pack: Any, model: type[P], *, package: str, default: str, label: str,
                 merge: Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]]) -> P:
    """None (the default pack), a `model` as is, a shipped pack name, a JSON path, or a dict
    merged over the default; a dict without its own `version` is recorded as
    `<default version>+<digest of the overrides>`, so results say what asked them.

    Examples:
        A dict override without its own version is recorded as the default's version plus a
        digest of the changes:

        >>> import json, sys, tempfile, pathlib
        >>> from pydantic import BaseModel
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "example_pack_b" / "packs").mkdir(parents=True)
        >>> _ = (root / "example_pack_b" / "__init__.py").write_text("")
        >>> pack = {"version": "toy-1", "ask": "Is it red?"}
        >>> _ = (root / "example_pack_b" / "packs" / "default.json").write_text(json.dumps(pack))
        >>> sys.path.insert(0, str(root))
        >>> class Pack(BaseModel):
        ...     version: str
        ...     ask: str
        >>> def merge(base, override):
        ...     return {**base, **override}
        >>> options = dict(package="example_pack_b", default="default", label="toy", merge=merge)
        >>> resolve_pack(None, Pack, **options)
        Pack(version='toy-1', ask='Is it red?')
        >>> custom = resolve_pack({"ask": "Is it blue?"}, Pack, **options)
        >>> custom.ask, custom.version.startswith("toy-1+"), len(custom.version)
        ('Is it blue?', True, 14)
        >>> resolve_pack({"ask": "Is it blue?"}, Pack, **options) == custom
        True
        >>> sys.path.remove(str(root))
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
