"""Image generators any method may drive: plain callables, diffusers text-to-image and image-edit pipelines.

A method that regenerates or refines images treats the image model as a black box with
one batched call, so a diffusers pipeline, a remote API wrapper or a toy test function
are interchangeable:

* text-to-image: `generator(prompts: list[str], seeds: list[int]) -> list[PIL.Image]`
* image edit:    `editor(images: list, instructions: list[str], seeds: list[int]) -> list[PIL.Image]`

Outputs are checked (one RGB PIL image per prompt), so a broken generator fails loudly
instead of shifting images against their prompts.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .images import to_pil

__all__ = [
    "CallableEditor",
    "CallableGenerator",
    "DiffusersImageEdit",
    "DiffusersTextToImage",
    "GeneratorError",
    "ImageEdit",
    "TextToImage",
    "generator_name",
    "load_editor",
    "load_generator",
]


class GeneratorError(RuntimeError):
    """A generator broke its contract (wrong number of images, unusable output, bad spec)."""


@runtime_checkable
class TextToImage(Protocol):
    """The text-to-image model under test: one image per prompt, reproducible from its seed."""

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[Any]: ...


@runtime_checkable
class ImageEdit(Protocol):
    """An instruction-following editor: one edited image per (image, instruction) pair."""

    def __call__(self, images: list[Any], instructions: list[str], seeds: list[int]) -> list[Any]: ...


def generator_name(generator: Any) -> str:
    """A readable id for run folders and tables: `.name` if set, else the callable's qualified name."""
    name = getattr(generator, "name", None)
    if isinstance(name, str) and name:
        return name
    fn = getattr(generator, "__qualname__", None) or type(generator).__qualname__
    return f"{getattr(generator, '__module__', '?')}.{fn}"


def _check_args(prompts: Sequence[str], seeds: Sequence[int], what: str = "prompts") -> tuple[list[str], list[int]]:
    prompts, seeds = list(prompts), list(seeds)
    if len(prompts) != len(seeds):
        raise ValueError(f"{len(prompts)} {what} but {len(seeds)} seeds")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise TypeError(f"{what[:-1]} {i} is not a string: {p!r}")
        if not p.strip():
            raise ValueError(f"{what[:-1]} {i} is empty")
    for i, s in enumerate(seeds):
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(f"seed {i} is not an int: {s!r}")
    return prompts, seeds


def _checked_images(images: Any, n: int, who: str) -> list:
    if images is None or not hasattr(images, "__len__"):
        raise GeneratorError(f"{who} returned {type(images).__name__}, not a list of {n} images")
    if len(images) != n:
        raise GeneratorError(f"{who} returned {len(images)} images for {n} inputs")
    try:
        return [to_pil(img, index=i) for i, img in enumerate(images)]
    except ValueError as exc:
        raise GeneratorError(f"{who} returned an unusable image: {exc}") from exc


class CallableGenerator:
    """Any function `(prompts, seeds) -> images` as a checked text-to-image generator."""

    def __init__(self, fn: Callable[[list[str], list[int]], Sequence[Any]], name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"CallableGenerator needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or generator_name(fn)

    def __call__(self, prompts: Sequence[str], seeds: Sequence[int]) -> list:
        prompts, seeds = _check_args(prompts, seeds)
        return _checked_images(self.fn(prompts, seeds), len(prompts), self.name)


class CallableEditor:
    """Any function `(images, instructions, seeds) -> images` as a checked image editor."""

    def __init__(self, fn: Callable[[list, list[str], list[int]], Sequence[Any]], name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"CallableEditor needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or generator_name(fn)

    def __call__(self, images: Sequence[Any], instructions: Sequence[str], seeds: Sequence[int]) -> list:
        instructions, seeds = _check_args(instructions, seeds, "instructions")
        if len(images) != len(instructions):
            raise ValueError(f"{len(images)} images but {len(instructions)} instructions")
        pil = [to_pil(img, index=i) for i, img in enumerate(images)]
        return _checked_images(self.fn(pil, instructions, seeds), len(instructions), self.name)


class _DiffusersBase:
    """Shared loading, seeding and chunking for diffusers pipelines."""

    def __init__(self, pipeline: Any, *, name: str | None = None, batch_size: int = 4,
                 call_kwargs: dict[str, Any] | None = None, progress: bool = False) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not callable(pipeline):
            raise TypeError(f"expected a diffusers pipeline, got {type(pipeline).__name__}")
        self.pipeline = pipeline
        self.batch_size = batch_size
        self.call_kwargs = {k: v for k, v in (call_kwargs or {}).items() if v is not None}
        self.name = name or getattr(getattr(pipeline, "config", None), "_name_or_path", None) or type(pipeline).__name__
        if hasattr(pipeline, "set_progress_bar_config"):
            pipeline.set_progress_bar_config(disable=not progress)

    @classmethod
    def from_pretrained(cls, model: str | os.PathLike, *, device: str | None = None, dtype: str | None = None,
                        revision: str | None = None, name: str | None = None, batch_size: int | None = None,
                        progress: bool = False, **call_kwargs: Any):
        """Load any diffusers pipeline (a Hub id or a local folder) with `DiffusionPipeline.from_pretrained`."""
        import torch
        from diffusers import DiffusionPipeline

        kwargs: dict[str, Any] = {}
        if dtype is not None:
            kwargs["torch_dtype"] = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if revision is not None:
            kwargs["revision"] = revision
        pipe = DiffusionPipeline.from_pretrained(str(model), **kwargs)
        pipe = pipe.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        extra = {"batch_size": batch_size} if batch_size is not None else {}
        return cls(pipe, name=name or str(model), progress=progress, call_kwargs=call_kwargs, **extra)

    def _seeded(self, seeds: list[int]) -> list:
        import torch
        # CPU generators: the same seed gives the same initial noise on any device.
        return [torch.Generator("cpu").manual_seed(int(s)) for s in seeds]

    def manifest(self) -> dict[str, Any]:
        """What produced the images: pipeline class, name and call settings."""
        return {"generator": self.name, "pipeline": type(self.pipeline).__name__,
                "call_kwargs": {k: v for k, v in self.call_kwargs.items() if isinstance(v, (int, float, str, bool))}}


class DiffusersTextToImage(_DiffusersBase):
    """Any diffusers text-to-image pipeline as a `TextToImage` generator (one image per prompt, seeded).

    `call_kwargs` (num_inference_steps, guidance_scale, height, width, negative_prompt, ...)
    go to every pipeline call.
    """

    def __call__(self, prompts: Sequence[str], seeds: Sequence[int]) -> list:
        prompts, seeds = _check_args(prompts, seeds)
        images: list = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompts[start:start + self.batch_size]
            out = self.pipeline(prompt=chunk, generator=self._seeded(seeds[start:start + self.batch_size]),
                                num_images_per_prompt=1, **self.call_kwargs)
            images.extend(_checked_images(out.images, len(chunk), self.name))
        return images


class DiffusersImageEdit(_DiffusersBase):
    """Any diffusers image-edit pipeline taking `image=` and `prompt=` (InstructPix2Pix, FLUX.1-Kontext,
    Qwen-Image-Edit) as an `ImageEdit` editor. One pair per call by default, since several edit
    pipelines do not batch different images."""

    def __init__(self, pipeline: Any, *, batch_size: int = 1, **kwargs: Any) -> None:
        super().__init__(pipeline, batch_size=batch_size, **kwargs)

    def __call__(self, images: Sequence[Any], instructions: Sequence[str], seeds: Sequence[int]) -> list:
        instructions, seeds = _check_args(instructions, seeds, "instructions")
        if len(images) != len(instructions):
            raise ValueError(f"{len(images)} images but {len(instructions)} instructions")
        pil = [to_pil(img, index=i) for i, img in enumerate(images)]
        edited: list = []
        for start in range(0, len(pil), self.batch_size):
            stop = start + self.batch_size
            chunk_images, chunk_text = pil[start:stop], instructions[start:stop]
            image_arg = chunk_images[0] if len(chunk_images) == 1 else chunk_images
            text_arg = chunk_text[0] if len(chunk_text) == 1 else chunk_text
            out = self.pipeline(image=image_arg, prompt=text_arg, generator=self._seeded(seeds[start:stop]),
                                **self.call_kwargs)
            edited.extend(_checked_images(out.images, len(chunk_text), self.name))
        return edited


def _import_callable(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise GeneratorError(f"cannot import {module_name!r} for generator {spec!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise GeneratorError(f"{module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise GeneratorError(f"{spec!r} is not callable")
    return target


def is_module_spec(spec: str) -> bool:
    """True for a `module:callable` reference (not an existing path, not a Hub id or folder)."""
    return ":" in spec and not Path(spec).exists() and not spec.split(":", 1)[0].startswith(("/", "."))


def _load(spec: Any, kwargs: dict[str, Any], wrapper: type, adapter: type, what: str) -> Any:
    if callable(spec):
        return spec if isinstance(spec, (adapter, wrapper)) else wrapper(spec)
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"{what} spec must be a callable, 'module:callable' or a path, got {type(spec).__name__}")
    spec = str(spec)
    if is_module_spec(spec):
        target = _import_callable(spec)
        if kwargs.pop("factory", False):
            target = target()
        return wrapper(target, name=spec)
    return adapter.from_pretrained(spec, **kwargs)


def load_generator(spec: Any, **kwargs: Any) -> Any:
    """A text-to-image generator from a callable, a `module:callable` path, or a diffusers folder / Hub id.

    A `module:callable` target may be a generator already or a factory taking no arguments
    (marked by `factory=True`); keyword arguments otherwise go to `DiffusersTextToImage.from_pretrained`.
    """
    return _load(spec, dict(kwargs), CallableGenerator, DiffusersTextToImage, "generator")


def load_editor(spec: Any, **kwargs: Any) -> Any:
    """An image editor from a callable, a `module:callable` path, or a diffusers edit folder / Hub id."""
    return _load(spec, dict(kwargs), CallableEditor, DiffusersImageEdit, "editor")
