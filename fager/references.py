"""Where reference images come from: a pluggable provider keyed by prompt id.

The extraction agent looks at 0..k reference images per prompt. A provider is anything
with `references(prompt_id, prompt) -> list of images`: a local folder (`FolderReferences`,
one subfolder or file stem per prompt id), a callable (`CallableReferences`, e.g. an
image search you run yourself), a mapping of id to images, or none (`NoReferences`).
`as_provider` turns each of these into a provider, and `digest` names the images handed
out, so a QA set built with other references is stored apart.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from vlmjudge.images import image_bytes_digest, is_image_file, to_pil


@runtime_checkable
class ReferenceProvider(Protocol):
    """Gives the reference images for one prompt (an empty list when there are none)."""

    def references(self, prompt_id: str, prompt: str) -> list[Any]: ...


class NoReferences:
    """No reference images: the rubric rests on the proposal and verification alone."""

    def references(self, prompt_id: str, prompt: str) -> list[Any]:
        return []


class FolderReferences:
    """A local folder keyed by prompt id: `<root>/<id>/*.png|jpg|...` (sorted by name) and/or
    `<root>/<id>.png|jpg|...`; an id with neither has no references.

    Args:
        root: the folder.
        max_images: references per prompt id at most; None: all.
    """

    def __init__(self, root: str | os.PathLike, max_images: int | None = None) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise FileNotFoundError(f"reference folder {self.root} does not exist")
        if max_images is not None and max_images < 0:
            raise ValueError(f"max_images must be >= 0, got {max_images}")
        self.max_images = max_images

    def references(self, prompt_id: str, prompt: str) -> list[Any]:
        name = str(prompt_id)
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise ValueError(f"prompt id {prompt_id!r} cannot name a reference folder")
        found = sorted(p for p in self.root.glob(f"{glob_escape(name)}.*")
                       if p.stem == name and is_image_file(p))
        folder = self.root / name
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if is_image_file(p))
        return found[:self.max_images] if self.max_images is not None else found


class CallableReferences:
    """A function `(prompt_id, prompt) -> image or list of images or None` as a provider."""

    def __init__(self, function: Callable[[str, str], Any]) -> None:
        if not callable(function):
            raise TypeError(f"CallableReferences needs a callable, got {type(function).__name__}")
        self.function = function

    def references(self, prompt_id: str, prompt: str) -> list[Any]:
        found = self.function(prompt_id, prompt)
        if found is None:
            return []
        if isinstance(found, (list, tuple)):
            return list(found)
        return [found]


class MappingReferences:
    """A mapping of prompt id to an image or a list of images."""

    def __init__(self, mapping: Mapping[str, Any]) -> None:
        self.mapping = {str(k): v for k, v in mapping.items()}

    def references(self, prompt_id: str, prompt: str) -> list[Any]:
        found = self.mapping.get(str(prompt_id))
        if found is None:
            return []
        return list(found) if isinstance(found, (list, tuple)) else [found]


def as_provider(source: Any) -> ReferenceProvider:
    """None -> NoReferences; a folder path -> FolderReferences; a mapping -> MappingReferences;
    a provider as is; any other callable -> CallableReferences."""
    if source is None:
        return NoReferences()
    if isinstance(source, ReferenceProvider):
        return source
    if isinstance(source, (str, os.PathLike)):
        return FolderReferences(source)
    if isinstance(source, Mapping):
        return MappingReferences(source)
    if callable(source):
        return CallableReferences(source)
    raise TypeError(f"references must be None, a folder, a mapping, a callable or a provider; "
                    f"got {type(source).__name__}")


def load_references(provider: ReferenceProvider, prompt_ids: Sequence[str], prompts: Sequence[str],
                    max_images: int | None = None) -> list[list[Any]]:
    """Each prompt's reference images as RGB PIL (at most `max_images`), with errors naming the prompt."""
    out = []
    for prompt_id, prompt in zip(prompt_ids, prompts, strict=True):
        images = provider.references(str(prompt_id), prompt)
        if max_images is not None:
            images = images[:max_images]
        try:
            out.append([to_pil(image, index=j) for j, image in enumerate(images)])
        except ValueError as error:
            raise ValueError(f"reference image for prompt id {prompt_id!r}: {error}") from error
    return out


def digest(images: Sequence[Any]) -> str:
    """A short content digest of one prompt's reference images ('none' when there are none)."""
    if not images:
        return "none"
    hasher = hashlib.sha256()
    for image in images:
        hasher.update(image_bytes_digest(to_pil(image)).encode())
    return hasher.hexdigest()[:12]


def glob_escape(name: str) -> str:
    """A file name with glob metacharacters escaped."""
    return "".join(f"[{c}]" if c in "*?[]" else c for c in name)


__all__ = [
    "CallableReferences", "FolderReferences", "MappingReferences", "NoReferences", "ReferenceProvider",
    "as_provider", "digest", "load_references",
]
