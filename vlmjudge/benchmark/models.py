"""The text-to-image models under test: folders of images already made (`ImageFolder`) and diffusers
pipelines that make them (`GeneratorModel`), each matched to the suite's prompt ids.

A folder holds `<prompt id>.<png|jpg|jpeg|webp>` (GenAI-Bench's layout) or `<prompt id>/<k>.<ext>`
for several images per prompt; a record's id is the prompt id, or `<prompt id>/<k>`, so the runs of
different models pair by id. A prompt with no image is listed as missing, never scored.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .suites import PromptSuite

#: The image files a model's folder contributes (any case).
MODEL_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
#: A model name names its folders (runs/<model>/, images/<model>/): letters, digits and . _ - only.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: How many ids a one-line message lists before it says "and N more".
SHOWN = 5


class BenchmarkError(ValueError):
    """A benchmark that cannot run as asked; the message is one line naming what to fix."""


def shown(ids: Sequence[str], limit: int = SHOWN) -> str:
    """A few ids for a one-line message.

    Examples:
        >>> shown(["a", "b"]), shown([str(i) for i in range(8)], 3)
        ('a, b', '0, 1, 2 and 5 more')
    """
    head = ", ".join(ids[:limit])
    return head if len(ids) <= limit else f"{head} and {len(ids) - limit} more"


def checked_model_name(name: object, flag: str) -> str:
    """A model's name as given, when it can name a folder on every system; else a BenchmarkError.

    Examples:
        >>> checked_model_name("sdxl-1.0", "--model-images")
        'sdxl-1.0'
        >>> checked_model_name("../up", "--model-images")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.models.BenchmarkError: --model-images: model name '../up' cannot name a folder (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100)
    """
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or name.endswith("."):
        raise BenchmarkError(f"{flag}: model name {name!r} cannot name a folder (letters, digits, '.', '_' and '-', "
                             "starting with a letter or digit, at most 100)")
    return name


def split_named(text: str, flag: str) -> tuple[str, str]:
    """`NAME=VALUE` of a repeatable flag, both sides non-empty.

    Examples:
        >>> split_named("sd15=out/sd15", "--model-images")
        ('sd15', 'out/sd15')
    """
    name, sep, value = str(text).partition("=")
    if not sep or not name.strip() or not value.strip():
        raise BenchmarkError(f"{flag} {text!r}: expected NAME=VALUE")
    return checked_model_name(name.strip(), flag), value.strip()


def check_distinct(names: Iterable[str]) -> None:
    """Refuse two models of one name (case aside: a case-blind disk would merge their folders)."""
    seen: dict[str, str] = {}
    for name in names:
        if name.lower() in seen:
            raise BenchmarkError(f"model name {name!r} is given twice" + (
                "" if seen[name.lower()] == name else f" (as {seen[name.lower()]!r}; folders ignore case on some disks)"))
        seen[name.lower()] = name


@dataclass(frozen=True)
class ModelImage:
    """One image of a model under test: its record id, its prompt's id, its index k (None when the
    model has one image per prompt) and its file."""

    id: str
    prompt_id: str
    k: str | None
    path: Path


@dataclass
class FoundImages:
    """A model folder matched to a suite: its images in suite order, the prompts it has no image for,
    the image files that match no prompt, and its layout ("one" or "several" per prompt)."""

    images: list[ModelImage]
    missing: list[str]
    unmatched: list[str] = field(default_factory=list)
    layout: str = "one"


def _k_order(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def _images_by_stem(folder: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for entry in folder.iterdir():
        if entry.name.startswith(".") or entry.suffix.lower() not in MODEL_IMAGE_SUFFIXES or entry.is_dir():
            continue
        found.setdefault(entry.name[:-len(entry.suffix)], []).append(entry)
    return found


def find_images(folder: str | os.PathLike, suite: PromptSuite, flag: str = "--model-images") -> FoundImages:
    """Match a model's folder to the suite's prompt ids; a missing folder, a file for a folder, an id
    with two images or with both layouts, a folder mixing layouts and one with no image for any
    prompt are each a BenchmarkError.

    Examples:
        >>> import tempfile
        >>> from vlmjudge.benchmark.suites import SuitePrompt
        >>> root = Path(tempfile.mkdtemp())
        >>> _ = (root / "cat.png").write_bytes(b""), (root / "other.jpg").write_bytes(b"")
        >>> found = find_images(root, PromptSuite("demo", [SuitePrompt("cat", "a cat"), SuitePrompt("bus", "a bus")]))
        >>> [image.id for image in found.images], found.missing, found.unmatched
        (['cat'], ['bus'], ['other.jpg'])
    """
    root = Path(os.path.expanduser(str(folder)))
    if root.is_file():
        raise BenchmarkError(f"{flag} {root} is a file; give the folder of the model's images")
    if not root.is_dir():
        raise BenchmarkError(f"{flag} {root}: no such folder")
    flat = _images_by_stem(root)
    wanted = set(suite.ids())
    images, missing, layouts = [], [], set()
    for prompt in suite.prompts:
        files = flat.get(prompt.id, [])
        sub = root / prompt.id
        several = _images_by_stem(sub) if sub.is_dir() else {}
        if len(files) > 1:
            raise BenchmarkError(f"{flag} {root}: prompt {prompt.id!r} has {len(files)} images "
                                 f"({', '.join(sorted(f.name for f in files))}); keep one")
        if files and several:
            raise BenchmarkError(f"{flag} {root}: prompt {prompt.id!r} has both {files[0].name} and a folder of images; "
                                 "keep one layout")
        if files:
            layouts.add("one")
            images.append(ModelImage(prompt.id, prompt.id, None, files[0]))
        elif several:
            layouts.add("several")
            for k in sorted(several, key=_k_order):
                if len(several[k]) > 1:
                    raise BenchmarkError(f"{flag} {sub}: image {k!r} has {len(several[k])} files; keep one")
                images.append(ModelImage(f"{prompt.id}/{k}", prompt.id, k, several[k][0]))
        else:
            missing.append(prompt.id)
    if len(layouts) > 1:
        raise BenchmarkError(f"{flag} {root} mixes one image per prompt (<id>.png) with folders of images "
                             "(<id>/<k>.png); keep one layout")
    if not images:
        example = suite.prompts[0].id
        raise BenchmarkError(f"{flag} {root} holds no image for any of the suite's {len(suite)} prompts "
                             f"(expected {example}.png or {example}/0.png, suffixes {', '.join(MODEL_IMAGE_SUFFIXES)})")
    unmatched = sorted(f.name for stem, files in flat.items() if stem not in wanted for f in files)
    return FoundImages(images, missing, unmatched, layouts.pop())


def derive_seed(seed: int, prompt_id: str, k: int) -> int:
    """The seed of image `k` of one prompt: the same for the same (seed, prompt id, k) in any run,
    process or order, and unrelated between neighbours (the first 4 bytes of a SHA-256).

    Examples:
        >>> derive_seed(0, "00001", 0) == derive_seed(0, "00001", 0), derive_seed(0, "00001", 0) != derive_seed(0, "00001", 1)
        (True, True)
        >>> 0 <= derive_seed(7, "cat", 3) < 2 ** 32
        True
    """
    digest = hashlib.sha256(f"{int(seed)}\0{prompt_id}\0{int(k)}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


#: How a seed is derived, as the generator's manifest records it.
SEED_RULE = "first 4 bytes (big-endian) of sha256('<seed>\\0<prompt id>\\0<k>')"


@dataclass(frozen=True)
class GeneratorSettings:
    """How a generator is called: the base seed, steps, size, images per prompt, where it runs, and
    how many prompts one pipeline call takes."""

    seed: int = 0
    steps: int | None = None
    width: int | None = None
    height: int | None = None
    images_per_prompt: int = 1
    device: str | None = None
    dtype: str | None = None
    batch_size: int = 4

    def call_kwargs(self) -> dict[str, Any]:
        """The pipeline call's keywords these settings set (a setting left out keeps the pipeline's)."""
        given = {"num_inference_steps": self.steps, "height": self.height, "width": self.width}
        return {key: value for key, value in given.items() if value is not None}


@dataclass
class ImageFolder:
    """A model under test given as a folder of its images."""

    name: str
    folder: Path

    kind = "images"

    def describe(self) -> dict[str, Any]:
        """The model as the benchmark's manifest records it."""
        return {"name": self.name, "kind": self.kind, "folder": str(self.folder.resolve())}


@dataclass
class GeneratorModel:
    """A model under test given as a text-to-image generator: a diffusers pipeline id or folder, a
    `module:callable`, or (from Python) a callable `(prompts, seeds) -> images`. Its images go to
    `folder` (set by the benchmark: OUT/images/<name>)."""

    name: str
    pipeline: Any
    settings: GeneratorSettings
    folder: Path | None = None

    kind = "generator"

    def pipeline_label(self) -> str:
        """The pipeline as text: its Hub id, its folder (absolute, so a rerun from elsewhere is the
        same generator), or the callable's name."""
        if isinstance(self.pipeline, (str, os.PathLike)):
            folder = Path(os.path.expanduser(str(self.pipeline)))
            return str(folder.resolve()) if folder.is_dir() else str(self.pipeline)
        from ..generators import generator_name
        return generator_name(self.pipeline)

    def image_path(self, prompt_id: str, k: int) -> Path:
        """Where image k of a prompt goes: <id>.png with one image per prompt, else <id>/<k>.png."""
        assert self.folder is not None, "the benchmark sets the folder before generating"
        if self.settings.images_per_prompt == 1:
            return self.folder / f"{prompt_id}.png"
        return self.folder / prompt_id / f"{k}.png"

    def describe(self) -> dict[str, Any]:
        """The model and the settings that decide its images, as the manifests record them."""
        settings = self.settings
        return {"name": self.name, "kind": self.kind, "pipeline": self.pipeline_label(),
                "folder": None if self.folder is None else str(self.folder.resolve()), "seed": settings.seed,
                "seed_rule": SEED_RULE, "steps": settings.steps, "width": settings.width, "height": settings.height,
                "images_per_prompt": settings.images_per_prompt, "dtype": settings.dtype}


def model_images(specs: Mapping[str, str | os.PathLike] | Sequence[str] | None) -> list[ImageFolder]:
    """`--model-images NAME=DIR` values (or a {name: folder} mapping) as ImageFolders, names checked."""
    if not specs:
        return []
    pairs = specs.items() if isinstance(specs, Mapping) else (split_named(text, "--model-images") for text in specs)
    return [ImageFolder(checked_model_name(name, "--model-images"), Path(os.path.expanduser(str(folder))))
            for name, folder in pairs]


def generator_models(specs: Mapping[str, Any] | Sequence[str] | None, settings: GeneratorSettings) -> list[GeneratorModel]:
    """`--generator NAME=PIPELINE` values (or a {name: pipeline or callable} mapping) as GeneratorModels."""
    if not specs:
        return []
    pairs = specs.items() if isinstance(specs, Mapping) else (split_named(text, "--generator") for text in specs)
    return [GeneratorModel(checked_model_name(name, "--generator"), pipeline, settings) for name, pipeline in pairs]
